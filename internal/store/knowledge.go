package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
)

// The knowledge feature: Thoughtbox's knowledge graph of typed entities,
// their timestamped observations and directed, typed relations between
// them. An entity is unique by (type, name) within its namespace.
var _ = register(feature{Name: "knowledge", Migrations: []migration{{
	SQLite: `CREATE TABLE kg_entities (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  label TEXT NOT NULL,
  properties TEXT NOT NULL,
  visibility TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (namespace, type, name)
);
CREATE INDEX kg_entities_list ON kg_entities (namespace, created_at, id);
CREATE TABLE kg_observations (
  id TEXT NOT NULL PRIMARY KEY,
  entity_id TEXT NOT NULL REFERENCES kg_entities (id),
  content TEXT NOT NULL,
  source_session TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX kg_observations_entity ON kg_observations (entity_id, created_at);
CREATE TABLE kg_relations (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  from_id TEXT NOT NULL REFERENCES kg_entities (id),
  to_id TEXT NOT NULL REFERENCES kg_entities (id),
  relation_type TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (from_id, to_id, relation_type)
);
CREATE INDEX kg_relations_to ON kg_relations (to_id)`,
	Postgres: `CREATE TABLE kg_entities (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  label TEXT NOT NULL,
  properties TEXT NOT NULL,
  visibility TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (namespace, type, name)
);
CREATE INDEX kg_entities_list ON kg_entities (namespace, created_at, id);
CREATE TABLE kg_observations (
  id TEXT NOT NULL PRIMARY KEY,
  entity_id TEXT NOT NULL REFERENCES kg_entities (id),
  content TEXT NOT NULL,
  source_session TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX kg_observations_entity ON kg_observations (entity_id, created_at);
CREATE TABLE kg_relations (
  id TEXT NOT NULL PRIMARY KEY,
  namespace TEXT NOT NULL,
  from_id TEXT NOT NULL REFERENCES kg_entities (id),
  to_id TEXT NOT NULL REFERENCES kg_entities (id),
  relation_type TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (from_id, to_id, relation_type)
);
CREATE INDEX kg_relations_to ON kg_relations (to_id)`,
}}})

// Knowledge is the accessor of the knowledge feature.
type Knowledge struct{ s *Store }

// Knowledge returns the knowledge-graph accessor.
func (s *Store) Knowledge() Knowledge { return Knowledge{s} }

// Entity is a node of the knowledge graph.
type Entity struct {
	ID         string
	Name       string
	Type       string
	Label      string
	Properties json.RawMessage // a JSON object
	Visibility string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Observation is a timestamped note on an entity.
type Observation struct {
	ID            string
	EntityID      string
	Content       string
	SourceSession string
	CreatedAt     time.Time
}

// Relation is a directed, typed edge.
type Relation struct {
	ID        string
	FromID    string
	ToID      string
	Type      string
	CreatedAt time.Time
}

const entityCols = "id, name, type, label, properties, visibility, created_at, updated_at"

func scanEntity(sc interface{ Scan(...any) error }) (Entity, error) {
	var e Entity
	var props string
	var created, updated int64
	err := sc.Scan(&e.ID, &e.Name, &e.Type, &e.Label, &props, &e.Visibility, &created, &updated)
	e.Properties = json.RawMessage(props)
	e.CreatedAt, e.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return e, err
}

func getEntity(ctx context.Context, b *backend, q queryer, ns, id string) (Entity, error) {
	e, err := scanEntity(q.QueryRowContext(ctx, b.q("SELECT "+entityCols+" FROM kg_entities WHERE id = ? AND namespace = ?"), id, ns))
	if err == sql.ErrNoRows {
		return e, &NotFoundError{What: "entity", ID: id}
	}
	return e, err
}

// CreateEntity adds e (its ID, times are set here) to namespace ns. If ns
// already has an entity of that type and name, that one is returned, as
// it is, with existing true.
func (k Knowledge) CreateEntity(ctx context.Context, ns string, e Entity) (out Entity, existing bool, err error) {
	if len(e.Properties) == 0 {
		e.Properties = json.RawMessage("{}")
	}
	if e.Visibility == "" {
		e.Visibility = "public"
	}
	err = k.s.tx(ctx, "knowledge.createEntity", func(b *backend, tx *sql.Tx) error {
		found, err := scanEntity(tx.QueryRowContext(ctx, b.q("SELECT "+entityCols+" FROM kg_entities WHERE namespace = ? AND type = ? AND name = ?"), ns, e.Type, e.Name))
		if err == nil {
			out, existing = found, true
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		now := b.nowMs()
		out, existing = e, false
		out.ID, out.CreatedAt, out.UpdatedAt = NewID(), time.UnixMilli(now), time.UnixMilli(now)
		_, err = tx.ExecContext(ctx, b.q("INSERT INTO kg_entities ("+entityCols+", namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			out.ID, out.Name, out.Type, out.Label, string(out.Properties), out.Visibility, now, now, ns)
		return err
	})
	return out, existing, err
}

// Entity returns entity id of ns and its observations, oldest first.
func (k Knowledge) Entity(ctx context.Context, ns, id string) (Entity, []Observation, error) {
	var e Entity
	var obs []Observation
	err := k.s.read(ctx, "knowledge.getEntity", func(b *backend, q queryer) error {
		var err error
		if e, err = getEntity(ctx, b, q, ns, id); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, b.q("SELECT id, content, source_session, created_at FROM kg_observations WHERE entity_id = ? ORDER BY created_at, id"), id)
		if err != nil {
			return err
		}
		defer rows.Close()
		obs = []Observation{}
		for rows.Next() {
			o := Observation{EntityID: id}
			var src sql.NullString
			var created int64
			if err := rows.Scan(&o.ID, &o.Content, &src, &created); err != nil {
				return err
			}
			o.SourceSession, o.CreatedAt = src.String, time.UnixMilli(created)
			obs = append(obs, o)
		}
		return rows.Err()
	})
	return e, obs, err
}

// EntityFilter selects entities for ListEntities.
type EntityFilter struct {
	Types []string
	// NamePattern keeps entities whose name contains it, ignoring case;
	// "*" in it matches any run of characters.
	NamePattern   string
	Limit, Offset int
}

// ListEntities returns the entities of ns that match f, oldest first, and
// how many match in all.
func (k Knowledge) ListEntities(ctx context.Context, ns string, f EntityFilter) ([]Entity, int, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var out []Entity
	var total int
	err := k.s.read(ctx, "knowledge.listEntities", func(b *backend, q queryer) error {
		where := "namespace = ?"
		args := []any{ns}
		if len(f.Types) > 0 {
			where += " AND type IN (" + placeholders(len(f.Types)) + ")"
			for _, t := range f.Types {
				args = append(args, t)
			}
		}
		if f.NamePattern != "" {
			where += ` AND lower(name) LIKE ? ESCAPE '\'`
			args = append(args, likePattern(f.NamePattern))
		}
		if err := q.QueryRowContext(ctx, b.q("SELECT count(*) FROM kg_entities WHERE "+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, b.q("SELECT "+entityCols+" FROM kg_entities WHERE "+where+" ORDER BY created_at, id LIMIT ? OFFSET ?"), append(args, f.Limit, max(0, f.Offset))...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = []Entity{}
		for rows.Next() {
			e, err := scanEntity(rows)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, total, err
}

func likePattern(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`, `*`, `%`)
	return "%" + r.Replace(strings.ToLower(p)) + "%"
}

// AddObservation adds a note to entity id of ns.
func (k Knowledge) AddObservation(ctx context.Context, ns, entityID, content, sourceSession string) (Observation, error) {
	var o Observation
	err := k.s.tx(ctx, "knowledge.addObservation", func(b *backend, tx *sql.Tx) error {
		if _, err := getEntity(ctx, b, tx, ns, entityID); err != nil {
			return err
		}
		now := b.nowMs()
		o = Observation{ID: NewID(), EntityID: entityID, Content: content, SourceSession: sourceSession, CreatedAt: time.UnixMilli(now)}
		if _, err := tx.ExecContext(ctx, b.q("INSERT INTO kg_observations (id, entity_id, content, source_session, created_at) VALUES (?, ?, ?, ?, ?)"),
			o.ID, entityID, content, nullStr(sourceSession), now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, b.q("UPDATE kg_entities SET updated_at = ? WHERE id = ?"), now, entityID)
		return err
	})
	return o, err
}

// CreateRelation adds the edge from → to of type typ between two entities
// of ns. An edge that exists already is returned with existing true.
func (k Knowledge) CreateRelation(ctx context.Context, ns, from, to, typ string) (r Relation, existing bool, err error) {
	err = k.s.tx(ctx, "knowledge.createRelation", func(b *backend, tx *sql.Tx) error {
		for _, id := range []string{from, to} {
			if _, err := getEntity(ctx, b, tx, ns, id); err != nil {
				return err
			}
		}
		var created int64
		err := tx.QueryRowContext(ctx, b.q("SELECT id, created_at FROM kg_relations WHERE from_id = ? AND to_id = ? AND relation_type = ?"), from, to, typ).Scan(&r.ID, &created)
		if err == nil {
			r.FromID, r.ToID, r.Type, r.CreatedAt, existing = from, to, typ, time.UnixMilli(created), true
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		now := b.nowMs()
		r, existing = Relation{ID: NewID(), FromID: from, ToID: to, Type: typ, CreatedAt: time.UnixMilli(now)}, false
		_, err = tx.ExecContext(ctx, b.q("INSERT INTO kg_relations (id, namespace, from_id, to_id, relation_type, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
			r.ID, ns, from, to, typ, now)
		return err
	})
	return r, existing, err
}

// GraphNode is an entity reached by QueryGraph and its distance from the
// start.
type GraphNode struct {
	Entity
	Depth int
}

// QueryGraph walks the relations of ns from entity start, in both
// directions, breadth first, up to maxDepth hops, following only the given
// relation types (all if none). It returns the entities reached (the start
// at depth 0) and the relations walked.
func (k Knowledge) QueryGraph(ctx context.Context, ns, start string, maxDepth int, types []string) ([]GraphNode, []Relation, error) {
	var nodes []GraphNode
	var rels []Relation
	err := k.s.read(ctx, "knowledge.queryGraph", func(b *backend, q queryer) error {
		first, err := getEntity(ctx, b, q, ns, start)
		if err != nil {
			return err
		}
		nodes, rels = []GraphNode{{first, 0}}, []Relation{}
		seen := map[string]bool{start: true}
		seenRel := map[string]bool{}
		frontier := []string{start}
		for depth := 1; depth <= maxDepth && len(frontier) > 0; depth++ {
			ph := placeholders(len(frontier))
			query := "SELECT id, from_id, to_id, relation_type, created_at FROM kg_relations WHERE namespace = ? AND (from_id IN (" + ph + ") OR to_id IN (" + ph + "))"
			args := []any{ns}
			for range 2 {
				for _, id := range frontier {
					args = append(args, id)
				}
			}
			if len(types) > 0 {
				query += " AND relation_type IN (" + placeholders(len(types)) + ")"
				for _, t := range types {
					args = append(args, t)
				}
			}
			rows, err := q.QueryContext(ctx, b.q(query+" ORDER BY created_at, id"), args...)
			if err != nil {
				return err
			}
			var next []string
			for rows.Next() {
				var r Relation
				var created int64
				if err := rows.Scan(&r.ID, &r.FromID, &r.ToID, &r.Type, &created); err != nil {
					rows.Close()
					return err
				}
				r.CreatedAt = time.UnixMilli(created)
				if !seenRel[r.ID] {
					seenRel[r.ID] = true
					rels = append(rels, r)
				}
				for _, id := range []string{r.FromID, r.ToID} {
					if !seen[id] {
						seen[id] = true
						next = append(next, id)
					}
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, id := range next {
				e, err := getEntity(ctx, b, q, ns, id)
				if err != nil {
					return err
				}
				nodes = append(nodes, GraphNode{e, depth})
			}
			frontier = next
		}
		return nil
	})
	return nodes, rels, err
}

// KnowledgeStats are the counts of a namespace's graph.
type KnowledgeStats struct {
	Entities      int
	Relations     int
	Observations  int
	EntityTypes   map[string]int
	RelationTypes map[string]int
}

// Stats counts the graph of ns.
func (k Knowledge) Stats(ctx context.Context, ns string) (KnowledgeStats, error) {
	st := KnowledgeStats{EntityTypes: map[string]int{}, RelationTypes: map[string]int{}}
	err := k.s.read(ctx, "knowledge.stats", func(b *backend, q queryer) error {
		st = KnowledgeStats{EntityTypes: map[string]int{}, RelationTypes: map[string]int{}}
		for _, c := range []struct {
			query string
			into  map[string]int
			total *int
		}{
			{"SELECT type, count(*) FROM kg_entities WHERE namespace = ? GROUP BY type", st.EntityTypes, &st.Entities},
			{"SELECT relation_type, count(*) FROM kg_relations WHERE namespace = ? GROUP BY relation_type", st.RelationTypes, &st.Relations},
		} {
			rows, err := q.QueryContext(ctx, b.q(c.query), ns)
			if err != nil {
				return err
			}
			for rows.Next() {
				var t string
				var n int
				if err := rows.Scan(&t, &n); err != nil {
					rows.Close()
					return err
				}
				c.into[t] = n
				*c.total += n
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return q.QueryRowContext(ctx, b.q("SELECT count(*) FROM kg_observations o JOIN kg_entities e ON e.id = o.entity_id WHERE e.namespace = ?"), ns).Scan(&st.Observations)
	})
	return st, err
}
