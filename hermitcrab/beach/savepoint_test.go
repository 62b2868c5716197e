package beach

import (
	"bytes"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/identity"
)

// A save point that could not be restored must not be made: an export
// that compresses under the ciphertext limit but is larger than what
// Open accepts back would leave the instance believing it has a backup.
func TestASavePointThatCouldNotBeRestoredIsRefusedWhenSealing(t *testing.T) {
	id, _ := identity.Generate()
	export := bytes.Repeat([]byte("x"), maxRestored+1)
	sp, err := Seal(id, export)
	if err == nil {
		_, openErr := sp.Open(id)
		t.Fatalf("sealed %d bytes (%d of ciphertext); opening it: %v", len(export), len(sp.Ciphertext), openErr)
	}
	sp, err = Seal(id, export[:maxRestored])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sp.Open(id); err != nil || len(got) != maxRestored {
		t.Fatalf("an export at the limit: %d bytes back, %v", len(got), err)
	}
}
