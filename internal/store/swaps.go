package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// tradedTokensSQL counts each appearance of a token on either side of a swap
// the competition verified, whichever of the three writers (SPEC §6) found
// it: a swap found by push first needs its tokens priced as much as any. The "C" collation breaks ties by byte order, the
// same on every server whatever its locale.
const tradedTokensSQL = `
select token_id
from (
    select token_in as token_id from swaps
    where source in ('agent', 'sweep', 'chainhook') and tx_status = 'success'
    union all
    select token_out from swaps
    where source in ('agent', 'sweep', 'chainhook') and tx_status = 'success'
) as legs
where token_id <> 'unknown'
group by token_id
order by count(*) desc, token_id collate "C"
limit $1`

// TradedTokens returns the ids the agents trade most, most traded first, at
// most limit of them (SPEC §4.1). Ids are returned as stored, unvalidated:
// catalog.TokenSet filters them, so ask for more than the set keeps if a
// malformed id must not shrink it.
func (s *Store) TradedTokens(ctx context.Context, limit int) ([]string, error) {
	if limit < 0 {
		return nil, fmt.Errorf("traded tokens: negative limit %d", limit)
	}
	return collect(ctx, s.pool, "traded tokens", pgx.RowTo[string], tradedTokensSQL, limit)
}
