package store

import (
	"fmt"
	"strings"
	"testing"
)

func TestJobListKeepsTheFirstMaxInListedOrder(t *testing.T) {
	l := NewJobList(3)
	for i, a := range []uint32{0, 2, 0, 5, 2, 0, 1} {
		l.Offer(ListedJob{Offset: uint64(i + 1), Attempts: a})
	}
	var got []string
	for _, j := range l.Sorted() {
		got = append(got, fmt.Sprintf("%d/%d", j.Offset, j.Attempts))
	}
	if want := "4/5 2/2 5/2"; strings.Join(got, " ") != want {
		t.Fatalf("kept %v, want %s", got, want)
	}
	if l.Wants(1, 1) || !l.Wants(2, 1) {
		t.Fatal("Wants disagrees with what Offer would keep")
	}
	if NewJobList(0).Wants(9, 1) {
		t.Fatal("a list of none wants a job")
	}
}
