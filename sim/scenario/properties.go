package scenario

import (
	"fmt"
	"strings"

	"github.com/strata-log/strata/core/server"
)

// serverProperties is a server.properties text, built key by key, so that
// a scenario's server.Config is parsed by the rows that parse a
// production node's (core/server keys.go): the translation from keys to
// fields runs under the nemesis too.
type serverProperties struct{ text strings.Builder }

// set adds key=value.
func (p *serverProperties) set(key string, value any) { fmt.Fprintf(&p.text, "%s=%v\n", key, value) }

// parse applies the text on top of base. A key that does not parse is a
// bug of the scenario.
func (p *serverProperties) parse(base server.Config) server.Config {
	cfg, err := base.ParseProperties(p.text.String())
	if err != nil {
		panic(fmt.Sprintf("scenario: server.properties %q: %v", p.text.String(), err))
	}
	return cfg
}
