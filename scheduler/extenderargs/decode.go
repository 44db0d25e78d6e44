package extenderargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// readBody reads a whole request body into buf.
func readBody(buf *bytes.Buffer, r io.Reader) error {
	if _, err := buf.ReadFrom(r); err != nil {
		if err := tooLarge(err); err != nil {
			return err
		}
		return fmt.Errorf("reading the request body: %w", err)
	}
	return nil
}

// tooLarge words err if it is http.MaxBytesReader's, and is nil otherwise.
func tooLarge(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fmt.Errorf("request body is larger than the limit of %d bytes", tooLarge.Limit)
	}
	return nil
}

// Decode reads one JSON value of the named type from r, and nothing after
// it, with encoding/json: v shares no memory with what r read. Its errors
// say what was wrong in words a person can act on.
func Decode(r io.Reader, what string, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("request body is empty: want a JSON %s", what)
		}
		if err := tooLarge(err); err != nil {
			return err
		}
		return fmt.Errorf("request body is not a valid JSON %s: %w", what, err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return fmt.Errorf("request body has more after the JSON %s", what)
	default:
		if err := tooLarge(err); err != nil {
			return err
		}
		return fmt.Errorf("request body has data after the JSON %s: %w", what, err)
	}
}
