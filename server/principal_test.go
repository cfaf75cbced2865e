package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRolesHeld(t *testing.T) {
	for _, c := range []struct {
		holds []Role
		asked Role
		want  bool
	}{
		{[]Role{RoleViewer}, RoleViewer, true},
		{[]Role{RoleViewer}, RoleUser, false},
		{[]Role{RoleUser}, RoleViewer, true},
		{[]Role{RoleApprover}, RoleViewer, true},
		{[]Role{RoleApprover}, RoleUser, false},
		{[]Role{RoleUser}, RoleApprover, false},
		{[]Role{RoleUser, RoleApprover}, RoleAdmin, false},
		{[]Role{RoleAdmin}, RoleApprover, true},
		{nil, RoleViewer, false},
	} {
		assert.Equal(t, c.want, Principal{Roles: c.holds}.Has(c.asked), "%v asked %s", c.holds, c.asked)
	}
}
