package testenv

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestPostgresURL(t *testing.T) {
	t.Parallel()
	var schema string
	// Not parallel: the parent looks for the schema after the subtest ends.
	t.Run("private schema", func(t *testing.T) {
		conn, err := pgx.Connect(t.Context(), PostgresURL(t))
		require.NoError(t, err)
		defer conn.Close(t.Context())

		require.NoError(t, conn.QueryRow(t.Context(), `select current_schema()`).Scan(&schema))
		require.True(t, strings.HasPrefix(schema, "test_testpostgresurl_private_schema_"), schema)

		var tables int
		require.NoError(t, conn.QueryRow(t.Context(),
			`select count(*) from pg_tables where schemaname = $1`, schema).Scan(&tables))
		require.Zero(t, tables)

		// Unqualified names land in the private schema.
		_, err = conn.Exec(t.Context(), `create table t (x int)`)
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(t.Context(),
			`select count(*) from pg_tables where schemaname = $1`, schema).Scan(&tables))
		require.Equal(t, 1, tables)
	})

	// The subtest has ended, so its cleanup has dropped the schema.
	conn, err := pgx.Connect(t.Context(), PostgresURL(t))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var exists bool
	require.NoError(t, conn.QueryRow(t.Context(),
		`select exists (select from pg_namespace where nspname = $1)`, schema).Scan(&exists))
	require.False(t, exists)
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want string
	}{
		{
			give: "postgres://postgres@127.0.0.1:5432/pacer_test?sslmode=disable",
			want: "postgres://postgres@127.0.0.1:5432/pacer_test?search_path=s1&sslmode=disable",
		},
		{
			give: "postgresql://u:p@db/x",
			want: "postgresql://u:p@db/x?search_path=s1",
		},
		{
			give: "postgres://db/x?search_path=public",
			want: "postgres://db/x?search_path=s1",
		},
		{
			give: "host=127.0.0.1 dbname=pacer_test",
			want: "host=127.0.0.1 dbname=pacer_test search_path=s1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			got, err := withSearchPath(tt.give, "s1")
			require.NoError(t, err)
			require.Equal(t, tt.want, got)

			cfg, err := pgx.ParseConfig(got)
			require.NoError(t, err)
			require.Equal(t, "s1", cfg.RuntimeParams["search_path"])
		})
	}
}

func TestSchemaName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"x", strings.Repeat("Long/Name With Spaces ", 10)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := schemaName(t), schemaName(t)
			require.NotEqual(t, a, b)
			require.LessOrEqual(t, len(a), 63, "Postgres truncates identifiers beyond 63 bytes")
			require.Regexp(t, `^[a-z0-9_]+$`, a)
		})
	}
}
