package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// Depth implements [session.Depther] with one query. A job is running
// while the claim that set it so still holds its session's live lease,
// as [Store.Jobs] says.
func (s *Store) Depth(ctx context.Context) ([]session.JobCount, error) {
	var out []session.JobCount
	err := s.pool.with(ctx, func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, `SELECT j.kind,
			CASE WHEN j.state = 'running' AND j.epoch = s.epoch AND l.session_id IS NOT NULL THEN 'running' ELSE 'queued' END AS st,
			count(*)
		FROM vigil_jobs j
		JOIN vigil_sessions s ON s.id = j.session_id
		LEFT JOIN vigil_leases l ON l.session_id = j.session_id AND l.expires > clock_timestamp()
		WHERE j.state IN ('queued', 'running')
		GROUP BY 1, 2 ORDER BY 1, 2`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var jc session.JobCount
			var state string
			if err := rows.Scan(&jc.Kind, &state, &jc.N); err != nil {
				return err
			}
			jc.State = session.JobState(state)
			out = append(out, jc)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, session.StoreError("pgstore", "depth", "", err)
	}
	return out, nil
}

var _ session.Depther = (*Store)(nil)
