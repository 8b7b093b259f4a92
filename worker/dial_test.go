package worker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
)

// envMap is an environment for the SDK's environment configuration, so the
// cases below neither read nor change the process's own.
type envMap map[string]string

func (e envMap) Environ() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e envMap) LookupEnv(k string) (string, bool) {
	v, ok := e[k]
	return v, ok
}

func TestClientOptionsFollowTheSDKEnvironmentConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A config file as the temporal CLI writes it: a cloud profile beside
	// the default one.
	configFile := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(configFile, []byte(`
[profile.default]
address = "file-default:7233"

[profile.cloud]
address = "pacer.a1b2c.tmprl.cloud:7233"
namespace = "pacer.a1b2c"
api_key = "key-from-file"
`), 0o600))
	none := filepath.Join(dir, "absent.toml") // no file: the machine's own config must not leak in

	tests := []struct {
		name    string
		env     envMap
		dial    DialOptions
		wantErr string
		check   func(t *testing.T, o client.Options)
	}{
		{
			name: "nothing set: the local dev server",
			env:  envMap{"TEMPORAL_CONFIG_FILE": none},
			check: func(t *testing.T, o client.Options) {
				require.Equal(t, DefaultAddress, o.HostPort)
				require.Empty(t, o.Namespace, "the SDK reads empty as default")
				require.Nil(t, o.Credentials)
				require.Nil(t, o.ConnectionOptions.TLS)
			},
		},
		{
			name: "address and namespace from the environment",
			env:  envMap{"TEMPORAL_CONFIG_FILE": none, "TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "prod"},
			check: func(t *testing.T, o client.Options) {
				require.Equal(t, "temporal:7233", o.HostPort)
				require.Equal(t, "prod", o.Namespace)
			},
		},
		{
			name: "flags win over the environment",
			env:  envMap{"TEMPORAL_CONFIG_FILE": none, "TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "prod"},
			dial: DialOptions{Address: "other:7233", Namespace: "staging"},
			check: func(t *testing.T, o client.Options) {
				require.Equal(t, "other:7233", o.HostPort)
				require.Equal(t, "staging", o.Namespace)
			},
		},
		{
			name: "an API key brings credentials and TLS",
			env:  envMap{"TEMPORAL_CONFIG_FILE": none, "TEMPORAL_ADDRESS": "x.tmprl.cloud:7233", "TEMPORAL_API_KEY": "secret-key"},
			check: func(t *testing.T, o client.Options) {
				require.NotNil(t, o.Credentials)
				require.NotNil(t, o.ConnectionOptions.TLS)
			},
		},
		{
			name: "TLS settings",
			env: envMap{"TEMPORAL_CONFIG_FILE": none, "TEMPORAL_TLS": "true",
				"TEMPORAL_TLS_SERVER_NAME": "frontend.internal"},
			check: func(t *testing.T, o client.Options) {
				require.NotNil(t, o.ConnectionOptions.TLS)
				require.Equal(t, "frontend.internal", o.ConnectionOptions.TLS.ServerName)
			},
		},
		{
			name: "the default profile of the config file",
			env:  envMap{"TEMPORAL_CONFIG_FILE": configFile},
			check: func(t *testing.T, o client.Options) {
				require.Equal(t, "file-default:7233", o.HostPort)
			},
		},
		{
			name: "TEMPORAL_PROFILE picks a profile; the environment still wins over it",
			env:  envMap{"TEMPORAL_CONFIG_FILE": configFile, "TEMPORAL_PROFILE": "cloud", "TEMPORAL_NAMESPACE": "pacer.other"},
			check: func(t *testing.T, o client.Options) {
				require.Equal(t, "pacer.a1b2c.tmprl.cloud:7233", o.HostPort)
				require.Equal(t, "pacer.other", o.Namespace)
				require.NotNil(t, o.Credentials)
				require.NotNil(t, o.ConnectionOptions.TLS)
			},
		},
		{
			name:    "an unknown profile is an error",
			env:     envMap{"TEMPORAL_CONFIG_FILE": configFile, "TEMPORAL_PROFILE": "nope"},
			wantErr: "unable to find profile nope",
		},
		{
			name: "logger and metrics handler are passed on",
			env:  envMap{"TEMPORAL_CONFIG_FILE": none},
			dial: DialOptions{Logger: zap.NewNop(), MetricsHandler: client.MetricsNopHandler},
			check: func(t *testing.T, o client.Options) {
				require.NotNil(t, o.Logger)
				require.Equal(t, client.MetricsNopHandler, o.MetricsHandler)
				require.Equal(t, MemoSizeWarning, o.PayloadLimits.MemoSizeWarning, "the status memo does not warn at each change")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := clientOptions(tt.dial, tt.env)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}
