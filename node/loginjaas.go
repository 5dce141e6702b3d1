package node

import (
	"errors"
	"regexp"
	"strings"
)

// jaasOption matches one key="value" option of a JAAS login line.
var jaasOption = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// jaasLogin reads the username and password of a JAAS login line, Kafka's
// sasl.jaas.config: `<LoginModule class> required username="..."
// password="...";`. Errors never quote the value (it holds a secret).
func jaasLogin(value string) (user, password string, err error) {
	v := strings.TrimSpace(value)
	module, rest, _ := strings.Cut(v, " ")
	if module == "" || !strings.HasSuffix(v, ";") || !strings.HasPrefix(strings.TrimSpace(rest), "required") {
		return "", "", errors.New(`want "<LoginModule class> required username=\"...\" password=\"...\";"`)
	}
	for _, m := range jaasOption.FindAllStringSubmatch(rest, -1) {
		val := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
		switch m[1] {
		case "username":
			user = val
		case "password":
			password = val
		}
	}
	if user == "" || password == "" {
		return "", "", errors.New("the login line needs a non-empty username and password")
	}
	return user, password, nil
}

func parseJAAS(value string) (any, error) {
	if value == "" {
		return "", nil
	}
	if _, _, err := jaasLogin(value); err != nil {
		return nil, err
	}
	return value, nil
}
