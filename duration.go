package pacer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that travels in JSON as Go duration text
// ("5m0s"): the scheduler's input, carried state and status are read by
// people in the Web UI and the temporal CLI, where 300000000000 says
// nothing. It still reads a bare number as nanoseconds, the form inputs took
// before it existed, so recorded histories and runs in flight decode.
type Duration time.Duration

// String is the Go duration text.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the Go duration text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads Go duration text, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %.80q: want Go duration text like \"5m\"", s)
		}
		*d = Duration(v)
		return nil
	}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %.80s: want Go duration text like \"5m\" or nanoseconds", b)
	}
	*d = Duration(n)
	return nil
}
