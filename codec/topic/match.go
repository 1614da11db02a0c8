package topic

// Match reports whether topic matches filter, exactly as MQTT says it does: +
// stands for one level, # for the rest including none, and a topic beginning
// with $ is not matched by a filter whose first level is a wildcard (MQTT-4.7.2-1).
// Both are assumed valid (ValidateFilter, ValidateName). It allocates nothing.
func Match(filter, topic string) bool {
	if dollarExcluded(filter, topic) {
		return false
	}
	fi, ti := 0, 0
	for {
		fl, fnext, flast := nextLevel(filter, fi)
		if fl == "#" {
			return true
		}
		tl, tnext, tlast := nextLevel(topic, ti)
		if fl != "+" && fl != tl {
			return false
		}
		switch {
		case flast && tlast:
			return true
		case flast:
			return false
		case tlast:
			// The topic has run out: only a trailing # (matching no level) is left to match.
			return filter[fnext:] == "#"
		}
		fi, ti = fnext, tnext
	}
}

// Intersect reports whether some topic name matches both filters - "a filter
// touches a channel" (RFC 0002 "What a filter reaches").
func Intersect(a, b string) bool {
	if dollarExcluded(a, b) || dollarExcluded(b, a) {
		return false
	}
	ai, bi := 0, 0
	for {
		al, anext, alast := nextLevel(a, ai)
		bl, bnext, blast := nextLevel(b, bi)
		if al == "#" || bl == "#" {
			return true
		}
		if al != "+" && bl != "+" && al != bl {
			return false
		}
		switch {
		case alast && blast:
			return true
		case alast:
			return b[bnext:] == "#"
		case blast:
			return a[anext:] == "#"
		}
		ai, bi = anext, bnext
	}
}

// Contains reports whether every topic name inner matches is matched by outer as
// well - a filter "lying entirely inside" another (RFC 0002 "queue"). A filter
// contains itself.
func Contains(outer, inner string) bool {
	if dollarExcluded(outer, inner) {
		return false
	}
	oi, ii := 0, 0
	for {
		ol, onext, olast := nextLevel(outer, oi)
		il, inext, ilast := nextLevel(inner, ii)
		if ol == "#" {
			return true
		}
		// inner's # reaches any depth, which only an outer # covers; inner's +
		// any spelling, which only an outer + covers.
		if il == "#" || ol != "+" && ol != il {
			return false
		}
		switch {
		case olast && ilast:
			return true
		case ilast:
			// inner has ended; outer still matches that topic only through a trailing #.
			return outer[onext:] == "#"
		case olast:
			return false
		}
		oi, ii = onext, inext
	}
}

// dollarExcluded reports whether filter f cannot match what s spells because
// f opens with a wildcard and s with a level beginning $ (MQTT-4.7.2-1). s may
// be a topic or a filter.
func dollarExcluded(f, s string) bool {
	return len(f) > 0 && (f[0] == '+' || f[0] == '#') && (len(f) == 1 || f[1] == Separator) &&
		len(s) > 0 && s[0] == '$'
}
