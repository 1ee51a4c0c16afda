package typegen

// TypeScript resolves some references to a type alias while it is still
// resolving the alias, and reports TS2456 (circularly references itself)
// although the schema is fine. breakCycles finds such references among the
// named types and removes them.
//
// Which references are resolved eagerly (a conservative reading of the
// checker, confirmed against tsc): members of unions and intersections at
// the top of the alias; and anything inside an array or tuple type that is
// itself the type of a rest (`...X[]`) or optional (`X?`) tuple element,
// because those type nodes are not deferred. References inside object types
// are always deferred, as are plain array elements and tuple elements.
//
// A reference back into the cycle that is a top-level union member adds no
// values and is dropped (the least fixed point of Loop = Loop | string is
// string); any other becomes `unknown` with a warning.
func breakCycles(g *gen) {
	const (
		unseen = iota
		active
		done
	)
	state := map[*named]int{}
	var visit func(n *named)

	type mode uint8
	const (
		mTop      mode = iota // the alias's own type, through unions and intersections
		mDeferred             // inside an array or tuple: references are deferred
		mRestOpt              // the type of a rest or optional element
		mEager                // an array or tuple inside mRestOpt: resolved eagerly
	)
	var rewrite func(t *tsType, n *named, m mode, inUnion bool) *tsType
	elems := func(t *tsType, n *named, m mode) *tsType {
		c := *t
		changed := false
		c.elems = make([]*tsType, len(t.elems))
		for i, e := range t.elems {
			em := mDeferred
			if m == mEager {
				em = mEager
			} else if i >= t.minLen {
				em = mRestOpt
			}
			c.elems[i] = rewrite(e, n, em, false)
			changed = changed || c.elems[i] != e
		}
		if t.elem != nil {
			rm := mRestOpt
			if m == mEager {
				rm = mEager
			}
			c.elem = rewrite(t.elem, n, rm, false)
			changed = changed || c.elem != t.elem
		}
		if !changed {
			return t
		}
		return &c
	}
	rewrite = func(t *tsType, n *named, m mode, inUnion bool) *tsType {
		switch t.kind {
		case tRef:
			if m != mTop && m != mEager {
				return t
			}
			switch state[t.ref] {
			case unseen:
				visit(t.ref)
			case active:
				if inUnion && m == mTop {
					return tNever
				}
				msg := "circular $ref through " + t.ref.name + " cannot be a TypeScript type; shown as unknown"
				g.warns = append(g.warns, Warning{Tool: n.tool, Path: n.path, Message: msg})
				return unknownWarn(msg)
			}
		case tUnion, tInter:
			changed := false
			ms := make([]*tsType, len(t.members))
			for i, mem := range t.members {
				ms[i] = rewrite(mem, n, m, t.kind == tUnion)
				changed = changed || ms[i] != mem
			}
			if changed {
				if t.kind == tUnion {
					return withNote(withWarn(union(ms...), t.warn), t.note)
				}
				return withNote(withWarn(inter(ms...), t.warn), t.note)
			}
		case tArray:
			em := mDeferred
			if m == mRestOpt || m == mEager {
				em = mEager
			}
			if e := rewrite(t.elem, n, em, false); e != t.elem {
				c := *t
				c.elem = e
				return &c
			}
		case tTuple:
			tm := m
			if m == mRestOpt {
				tm = mEager
			}
			return elems(t, n, tm)
		}
		return t
	}
	visit = func(n *named) {
		state[n] = active
		if n.body != nil {
			n.body = rewrite(n.body, n, mTop, false)
		}
		state[n] = done
	}
	for _, n := range g.named {
		if state[n] == unseen {
			visit(n)
		}
	}
}
