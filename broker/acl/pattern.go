package acl

// globMatch reports whether name matches pattern, * standing for any run of
// characters (none included). It allocates nothing.
func globMatch(pattern, name string) bool {
	// The classic two-pointer match with one backtrack point: the last *.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// globsMeet reports whether some name matches both patterns: a search of
// the product of the two patterns' automata, state (i, j) being how far
// each has got.
func globsMeet(a, b string) bool {
	type state struct{ i, j int }
	seen := map[state]bool{}
	stack := []state{{0, 0}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		i, j := s.i, s.j
		if i == len(a) && j == len(b) {
			return true
		}
		aStar := i < len(a) && a[i] == '*'
		bStar := j < len(b) && b[j] == '*'
		// A * may match nothing.
		if aStar {
			stack = append(stack, state{i + 1, j})
		}
		if bStar {
			stack = append(stack, state{i, j + 1})
		}
		// Or one character, consumed by both.
		switch {
		case aStar && j < len(b) && !bStar:
			stack = append(stack, state{i, j + 1})
		case bStar && i < len(a) && !aStar:
			stack = append(stack, state{i + 1, j})
		case i < len(a) && j < len(b) && !aStar && !bStar && a[i] == b[j]:
			stack = append(stack, state{i + 1, j + 1})
		}
	}
	return false
}
