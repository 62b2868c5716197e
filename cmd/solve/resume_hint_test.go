package main

import "testing"

// The resume command of a run on PostgreSQL names its URL without the
// password, which belongs in PGPASSWORD (and is never shown).
func TestTheResumeCommandCarriesNoPassword(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://me:s3cr%23t@db.example/solve":                        "postgres://me@db.example/solve",
		"postgres://me@db.example/solve?password=s3cret&sslmode=require": `"postgres://me@db.example/solve?sslmode=require"`,
	} {
		if got := resumeLine("0123456789abcdef", dsn, true, &demoFlags{}); got != "solve resume 01234567 --db "+want+" --remote" {
			t.Errorf("%s: %s", dsn, got)
		}
	}
}
