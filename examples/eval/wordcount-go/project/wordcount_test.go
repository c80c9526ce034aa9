package wordcount

import "testing"

func TestCountsRepeatedWords(t *testing.T) {
	got := Count("the cat saw the dog")
	if got["the"] != 2 || got["cat"] != 1 {
		t.Fatalf("Count = %v", got)
	}
}

func TestIgnoresRepeatedSpaces(t *testing.T) {
	got := Count("  a  b\tb\n")
	if len(got) != 2 || got["b"] != 2 {
		t.Fatalf("Count = %v, want a:1 b:2 and nothing else", got)
	}
}
