package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/pacer-dev/pacer/workflows"
)

// ErrNoStatusMemo is returned by SharedStatus for a scheduler whose memo
// carries no snapshot (one written by an older build).
var ErrNoStatusMemo = errors.New("the scheduler's memo has no status document yet")

// SharedStatus reads the status document the scheduler keeps in its memo,
// through DescribeWorkflowExecution: not a billed action, and the same
// document for every reader (SPEC §7: the API's views, the operator's page
// and `pacer status --watch` add no queries however many they are). The
// memo holds what the document is made of, as of the scheduler's last
// change; the document is computed from it with the scheduler's own
// decision at the reader's clock.
func SharedStatus(ctx context.Context, c client.Client, workflowID string) (workflows.Status, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return workflows.Status{}, fmt.Errorf("describe %s: %w", workflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	p := info.GetMemo().GetFields()[workflows.MemoStatusKey]
	if p == nil {
		return workflows.Status{}, ErrNoStatusMemo
	}
	var m workflows.StatusMemo
	if err := converter.GetDefaultDataConverter().FromPayload(p, &m); err != nil {
		return workflows.Status{}, fmt.Errorf("decode the status memo: %w", err)
	}
	sn, err := decodeSnapshot(m)
	if err != nil {
		return workflows.Status{}, ErrNoStatusMemo // an older build's document: ask the scheduler
	}
	st := sn.Status(time.Now())
	st.HistoryLength = int(info.GetHistoryLength())
	return st, nil
}

// decodeSnapshot decodes the memo field the scheduler wrote (gzipped JSON).
func decodeSnapshot(m workflows.StatusMemo) (workflows.Snapshot, error) {
	zr, err := gzip.NewReader(bytes.NewReader(m.Gzip))
	if err != nil {
		return workflows.Snapshot{}, fmt.Errorf("status memo: %w", err)
	}
	var sn workflows.Snapshot
	if err := json.NewDecoder(io.LimitReader(zr, 4<<20)).Decode(&sn); err != nil {
		return workflows.Snapshot{}, fmt.Errorf("status memo: %w", err)
	}
	return sn, nil
}

// StatusShared is SharedStatus, falling back on the status query for a
// scheduler that keeps no status in its memo yet.
func StatusShared(ctx context.Context, c client.Client, workflowID string) (workflows.Status, error) {
	st, err := SharedStatus(ctx, c, workflowID)
	if errors.Is(err, ErrNoStatusMemo) {
		return Status(ctx, c, workflowID)
	}
	return st, err
}
