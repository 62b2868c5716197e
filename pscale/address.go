package pscale

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Address is a parsed pscale address: the digits to walk from the tree root,
// and the text as it was written, for showing back to the reader. The zero
// Address has no digits and every operation that walks refuses it.
type Address struct {
	text   string
	digits string
}

// errEmptyAddress is returned by walks given the zero Address.
var errEmptyAddress = errors.New(`empty address: give at least one digit, e.g. "0.1"`)

// ParseAddress reads an address from a string or a number.
//
// Every digit is one step from the tree root; dots are readers' marks and do
// not change the walk, so "0.12", "0.1.2" and "012" walk the same keys and
// "23.41" walks 2,3,4,1. Space around the address is trimmed; any other
// character is an error that names it.
//
// Numbers are formatted without an exponent (1e-7 is "0.0000001"). A float64
// has already lost trailing zeros — 0.10 arrives as 0.1 and walks 0,1 — which
// is why tools should declare addresses as strings. A json.Number keeps the
// digits as they were written (unless it has an exponent).
func ParseAddress(v any) (Address, error) {
	switch x := v.(type) {
	case string:
		return parseAddressText(x)
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, "eE") {
			f, err := x.Float64()
			if err != nil {
				return Address{}, fmt.Errorf("address %s: not a usable number: %w", s, err)
			}
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
		return parseAddressText(s)
	case float64:
		return parseAddressText(strconv.FormatFloat(x, 'f', -1, 64))
	case float32:
		return parseAddressText(strconv.FormatFloat(float64(x), 'f', -1, 32))
	case int:
		return parseAddressText(strconv.Itoa(x))
	case int64:
		return parseAddressText(strconv.FormatInt(x, 10))
	case nil:
		return Address{}, errors.New(`no address given: want a string such as "0.12"`)
	}
	return Address{}, fmt.Errorf(`address must be a string such as "0.12" (or a number), got %T`, v)
}

func parseAddressText(s string) (Address, error) {
	t := strings.TrimSpace(s)
	digits := make([]byte, 0, len(t))
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			digits = append(digits, byte(r))
		case r == '.':
		default:
			return Address{}, fmt.Errorf("address %q: %q is not a digit or a dot (digits are steps from the tree root, dots are only marks)", t, r)
		}
	}
	if len(digits) == 0 {
		return Address{}, fmt.Errorf(`address %q has no digits: give at least one, e.g. "0.1"`, t)
	}
	return Address{text: t, digits: string(digits)}, nil
}

// String returns the address as it was written (numbers as formatted).
func (a Address) String() string { return a.text }

// Digits returns the walk: one byte '0'..'9' per step.
func (a Address) Digits() string { return a.digits }

// MarshalJSON writes the address as a JSON string, as written.
func (a Address) MarshalJSON() ([]byte, error) { return json.Marshal(a.text) }

// UnmarshalJSON reads a JSON string or number. A number's text is used as it
// appears in the JSON, so trailing zeros that reach this far are kept. null
// leaves the Address unchanged, as encoding/json does for other types.
func (a *Address) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	var v any
	switch {
	case string(data) == "null":
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		v = s
	default:
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf(`address must be a string such as "0.12" (or a number), got %s`, data)
		}
		v = n
	}
	p, err := ParseAddress(v)
	if err != nil {
		return err
	}
	*a = p
	return nil
}

// ParsePscale reads a pscale level (the point of point mode). Models often
// send numbers as strings, so "-3" and " -3 " are read as -3; a whole float
// (-3.0) is accepted. Anything that is not a whole number is an error.
func ParsePscale(v any) (int, error) {
	n, ok := wholeNumber(v)
	if !ok {
		return 0, fmt.Errorf("pscale %s: not a whole number (a pscale is an integer such as -1 or 2)", show(v))
	}
	return n, nil
}

// wholeNumber coerces the JSON-ish values a model might send for an integer.
func wholeNumber(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), int64(int(x)) == x
	case float64:
		return floatToInt(x)
	case json.Number:
		if n, ok := decimalInt(string(x)); ok {
			return n, true
		}
		f, err := x.Float64()
		if err != nil {
			return 0, false
		}
		return floatToInt(f)
	case string:
		return decimalInt(strings.TrimSpace(x))
	}
	return 0, false
}

// decimalInt reads "12", "-3" or "-3.0" — plain decimal only, so that the
// hex, "Inf" and "NaN" forms strconv.ParseFloat would accept are refused.
func decimalInt(s string) (int, bool) {
	if i := strings.IndexByte(s, '.'); i > 0 && strings.Trim(s[i+1:], "0") == "" {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func floatToInt(f float64) (int, bool) {
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
