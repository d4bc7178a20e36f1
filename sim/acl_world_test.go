package sim

import (
	"strings"
	"testing"
)

// The permission checks answer from the ACL table's world permissions
// alone (assertPermitted): CheckInvariants refuses a table whose world
// permissions are not what its lists grant everyone.
func TestInvariantsCheckWorldPermissions(t *testing.T) {
	s := NewServer(ServerConfig{})
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	s.acls.world[aclReadOnly] |= 2 // write, which world:anyone:r does not grant
	err := s.CheckInvariants()
	if err == nil || !strings.Contains(err.Error(), "grants everyone") {
		t.Fatalf("CheckInvariants = %v, want the world permissions refused", err)
	}
}
