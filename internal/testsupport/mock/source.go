// Package mock holds function-field mocks of slackpoll's ports for tests, after
// github.com/benbjohnson/wtf's mock package: a test sets the functions of the calls
// it changes and leaves the rest to the Source it wraps.
package mock

import (
	"context"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Source is a readmodel.Source whose methods call their Fn field when it is set and
// Next's method otherwise: a test wraps a scripted Slack (or the real client over the
// fake) and states only what it changes. It is as safe for concurrent use as its
// functions and Next are; set the functions before the Source is used, or between
// ticks.
type Source struct {
	Next rm.Source

	AuthTestFn            func(ctx context.Context) (rm.Identity, error)
	ConversationInfoFn    func(ctx context.Context, channel string) (rm.ConversationInfo, error)
	HistoryFn             func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error)
	RepliesFn             func(ctx context.Context, req rm.RepliesRequest) (rm.Page, error)
	UserInfoFn            func(ctx context.Context, id string) (rm.User, error)
	ReactionsGetFn        func(ctx context.Context, ref rm.Ref) (rm.Message, error)
	MemberConversationsFn func(ctx context.Context, types []string, cursor string) ([]rm.ConversationInfo, string, error)
	// WaitingFn answers Waiting (the poller's progress log asks a Source that has
	// it what a method waits for); unset, Waiting asks Next if it can answer.
	WaitingFn func(method string) (until time.Time, why string, ok bool)
}

var _ rm.Source = (*Source)(nil)

func (s *Source) AuthTest(ctx context.Context) (rm.Identity, error) {
	if s.AuthTestFn != nil {
		return s.AuthTestFn(ctx)
	}
	return s.Next.AuthTest(ctx)
}

func (s *Source) ConversationInfo(ctx context.Context, channel string) (rm.ConversationInfo, error) {
	if s.ConversationInfoFn != nil {
		return s.ConversationInfoFn(ctx, channel)
	}
	return s.Next.ConversationInfo(ctx, channel)
}

func (s *Source) History(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
	if s.HistoryFn != nil {
		return s.HistoryFn(ctx, req)
	}
	return s.Next.History(ctx, req)
}

func (s *Source) Replies(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
	if s.RepliesFn != nil {
		return s.RepliesFn(ctx, req)
	}
	return s.Next.Replies(ctx, req)
}

func (s *Source) UserInfo(ctx context.Context, id string) (rm.User, error) {
	if s.UserInfoFn != nil {
		return s.UserInfoFn(ctx, id)
	}
	return s.Next.UserInfo(ctx, id)
}

func (s *Source) ReactionsGet(ctx context.Context, ref rm.Ref) (rm.Message, error) {
	if s.ReactionsGetFn != nil {
		return s.ReactionsGetFn(ctx, ref)
	}
	return s.Next.ReactionsGet(ctx, ref)
}

func (s *Source) MemberConversations(ctx context.Context, types []string, cursor string) ([]rm.ConversationInfo, string, error) {
	if s.MemberConversationsFn != nil {
		return s.MemberConversationsFn(ctx, types, cursor)
	}
	return s.Next.MemberConversations(ctx, types, cursor)
}

// Waiting reports what a call of method waits for: WaitingFn's answer, else Next's
// when Next reports waits, else none.
func (s *Source) Waiting(method string) (time.Time, string, bool) {
	if s.WaitingFn != nil {
		return s.WaitingFn(method)
	}
	if w, ok := s.Next.(interface {
		Waiting(string) (time.Time, string, bool)
	}); ok {
		return w.Waiting(method)
	}
	return time.Time{}, "", false
}
