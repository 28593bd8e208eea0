// Package release holds the checks of the release configuration (.goreleaser.yaml):
// TestReleaseConfigMatchesGoReleasersSchema validates it against the JSON schema of
// GoReleaser v2.15.1 (testdata); TestReleaseConfig checks what the release promises (static binaries for linux and darwin on amd64 and arm64,
// checksums, the container image from deploy/docker); with -release.build,
// TestReleaseTargetsBuild cross-compiles every target with the file's own flags and
// checks each binary. It has no code of its own: CI runs both (.ci/run) instead of
// installing GoReleaser, whose install compiles for many minutes.
package release
