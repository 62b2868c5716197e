package lib

import "testing"

func TestLib(t *testing.T) {
	if OnlyTests() != 2 || (Config{Debug: true}).Peek() != true {
		t.Fatal("no")
	}
}
