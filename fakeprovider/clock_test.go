package fakeprovider_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

func TestFakeClock(t *testing.T) {
	c := fakeprovider.NewFakeClock(t0)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c.Advance(time.Second)
			_ = c.Now()
		})
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("Now = %v after 10 concurrent Advance(1s)", got)
	}
	c.Set(t0)
	if !c.Now().Equal(t0) {
		t.Errorf("Set: %v", c.Now())
	}
	c.Advance(-time.Minute)
	if !c.Now().Equal(t0.Add(-time.Minute)) {
		t.Errorf("negative Advance: %v", c.Now())
	}
}
