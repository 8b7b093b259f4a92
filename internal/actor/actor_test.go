package actor

import (
	"context"
	"testing"
)

func TestFrom(t *testing.T) {
	if got := From(context.Background()); got != Unknown {
		t.Fatalf("From(empty) = %q, want %q", got, Unknown)
	}
	if got := From(With(context.Background(), "alice")); got != "alice" {
		t.Fatalf("From(With(alice)) = %q", got)
	}
	if got := From(With(context.Background(), "")); got != Unknown {
		t.Fatalf("From(With(\"\")) = %q, want %q", got, Unknown)
	}
}
