package sqlite

import (
	"fmt"

	"saguin/store"
)

type sessionStore struct{}

// Sessions opens the session store.
func (p *Provider) Sessions() (store.Sessions, error) {
	return nil, fmt.Errorf("storage %s: sessions are not kept by the sqlite provider yet", p.opts.Name)
}
