package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// AsRole is connString (a test's, PostgresURL) for a login user of its own
// that is a member of group (pacer_public, pacer_worker: migration 025)
// and nothing more, dropped when t ends. The user has no password: the
// test server trusts local connections, as make test's does.
func AsRole(t testing.TB, connString, group string) string {
	t.Helper()
	random := make([]byte, 6)
	_, _ = rand.Read(random) // crypto/rand.Read never fails
	name := "test_" + group + "_" + hex.EncodeToString(random)
	if err := execSQL(connString, "create role "+name+" login in role "+group); err != nil {
		t.Fatalf("testenv: create role %s in %s: %v", name, group, err)
	}
	t.Cleanup(func() {
		if err := execSQL(connString, "drop role "+name); err != nil {
			t.Errorf("testenv: drop role %s: %v", name, err)
		}
	})
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		return connString + " user=" + name + " password=''"
	}
	u, err := url.Parse(connString)
	if err != nil {
		t.Fatalf("testenv: cannot set the user of the database URL")
	}
	u.User = url.User(name)
	return u.String()
}
