package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

func checkTemplateSize(n int) error {
	if n > MaxTemplateBytes {
		return fmt.Errorf("template body is %d bytes, limit %d", n, MaxTemplateBytes)
	}
	return nil
}

func checkParameterCount(n int) error {
	if n > MaxParameters {
		return fmt.Errorf("template declares %d parameters, limit %d", n, MaxParameters)
	}
	return nil
}

// templateDoc is the part of a rendered template the checks read.
type templateDoc struct {
	Parameters map[string]json.RawMessage
	Resources  map[string]json.RawMessage
}

// check verifies a rendered stack as a whole: size limits (user data
// included), and that the parameter values cover exactly the parameters the
// template declares, so a template edit cannot leave a parameter unset or
// pass an unknown one.
func check(r *Rendered) error {
	if err := checkTemplateSize(len(r.Template)); err != nil {
		return err
	}
	var doc templateDoc
	if err := json.Unmarshal(r.Template, &doc); err != nil {
		return fmt.Errorf("parsing rendered template: %w", err)
	}
	if err := checkParameterCount(len(doc.Parameters)); err != nil {
		return err
	}
	if err := checkTemplateUserData(doc); err != nil {
		return err
	}
	var undeclared, unset []string
	for k := range r.Parameters {
		if _, ok := doc.Parameters[k]; !ok {
			undeclared = append(undeclared, k)
		}
	}
	for k := range doc.Parameters {
		if _, ok := r.Parameters[k]; !ok {
			unset = append(unset, k)
		}
	}
	if len(undeclared) > 0 || len(unset) > 0 {
		slices.Sort(undeclared)
		slices.Sort(unset)
		return fmt.Errorf("parameters out of step with the template: undeclared [%s], unset [%s]",
			strings.Join(undeclared, " "), strings.Join(unset, " "))
	}
	return nil
}
