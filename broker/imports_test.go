package broker

import (
	"os/exec"
	"strings"
	"testing"
)

// The broker holds its state in the stores it is given and builds none: no
// store implementation is among what it compiles in (tests build memory
// stores through brokertest, which the broker itself does not import).
func TestTheBrokerImportsNoStoreImplementation(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list named no dependency")
	}
	for _, d := range deps {
		for _, impl := range []string{"/store/memory", "/store/sqlite", "/broker/brokertest"} {
			if strings.HasSuffix(d, impl) || strings.Contains(d, impl+"/") {
				t.Errorf("the broker depends on %s", d)
			}
		}
	}
}
