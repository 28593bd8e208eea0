package boltstore

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestIdleStoresKeepNoScratch checks that an open store between write transactions
// keeps none of their working memory: a daemon of many workspaces holds each store
// open while it idles between ticks, and a page of 999 messages needs hundreds of
// kilobytes of it (arena chunks, the tail queue), which every store used to keep.
func TestIdleStoresKeepNoScratch(t *testing.T) {
	const stores = 40
	page := make([]readmodel.Message, 999)
	for i := range page {
		page[i] = msg(fmt.Sprintf("1700000000.%06d", i))
		page[i].Text = fmt.Sprintf("message %d with some words in it, as a page of Slack history has", i)
	}
	dir := t.TempDir()
	var open []*Store
	t.Cleanup(func() {
		for _, s := range open {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	for i := range stores {
		s, err := Open(filepath.Join(dir, fmt.Sprintf("s%d.db", i)), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // the second empties the pools' victim caches
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	for _, s := range open {
		err := s.Update(func(tx readmodel.Tx) error {
			for _, m := range page {
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	per := (float64(heap()) - float64(before)) / stores
	t.Logf("heap kept per idle store after a 999-message transaction: %.0f B", per)
	// One arena chunk is 64 KiB; before the scratch was pooled each store kept
	// about 300 KiB here.
	if per > 32<<10 {
		t.Errorf("each idle store keeps %.0f B after a 999-message transaction, want under 32 KiB", per)
	}
}
