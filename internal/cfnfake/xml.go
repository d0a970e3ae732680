package cfnfake

import (
	"encoding/xml"
	"strings"
	"time"
)

const xmlns = "http://cloudformation.amazonaws.com/doc/2010-05-15/"

// xw writes the query protocol's XML responses.
type xw struct{ b strings.Builder }

func (x *xw) open(name string)  { x.b.WriteString("<" + name + ">") }
func (x *xw) close(name string) { x.b.WriteString("</" + name + ">") }

func (x *xw) leaf(name, val string) {
	x.open(name)
	_ = xml.EscapeText(&x.b, []byte(val))
	x.close(name)
}

// opt writes a leaf only when val is set.
func (x *xw) opt(name, val string) {
	if val != "" {
		x.leaf(name, val)
	}
}

func (x *xw) time(name string, t time.Time) {
	if !t.IsZero() {
		x.leaf(name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
}

func (x *xw) list(name string, n int, member func(i int)) {
	x.open(name)
	for i := 0; i < n; i++ {
		x.open("member")
		member(i)
		x.close("member")
	}
	x.close(name)
}

func response(action, requestID string, result func(*xw)) string {
	var x xw
	x.b.WriteString(`<` + action + `Response xmlns="` + xmlns + `">`)
	x.open(action + "Result")
	if result != nil {
		result(&x)
	}
	x.close(action + "Result")
	x.open("ResponseMetadata")
	x.leaf("RequestId", requestID)
	x.close("ResponseMetadata")
	x.close(action + "Response")
	return x.b.String()
}

func errorResponse(typ, code, msg, requestID string) string {
	var x xw
	x.b.WriteString(`<ErrorResponse xmlns="` + xmlns + `">`)
	x.open("Error")
	x.leaf("Type", typ)
	x.leaf("Code", code)
	x.leaf("Message", msg)
	x.close("Error")
	x.leaf("RequestId", requestID)
	x.close("ErrorResponse")
	return x.b.String()
}
