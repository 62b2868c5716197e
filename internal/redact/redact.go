// Package redact hides the secrets a value shown to a person may carry.
package redact

import "net/url"

// Hidden is what stands in place of a secret.
const Hidden = "xxxxx"

// URL is raw without its password, without a user name given alone
// (https://TOKEN@host/ is how some services take their token) and with
// the values of its query hidden (where gateways and some servers take
// their token): what may be printed of a URL a person gave. A value that does not parse as a URL
// is hidden whole, since nothing in it can be told apart.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Hidden
	}
	if _, hasPassword := u.User.Password(); u.User != nil && !hasPassword {
		u.User = url.User(Hidden)
	}
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			q[k] = []string{Hidden}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
