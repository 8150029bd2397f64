package host

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// bindingDeliverer records the brokers bound to it and delivers nowhere.
type bindingDeliverer struct{ bound []*Broker }

func (d *bindingDeliverer) DeliverInvoke(Target, InvokeRequest) (int, error) { return 0, nil }
func (d *bindingDeliverer) BindBroker(b *Broker)                             { d.bound = append(d.bound, b) }

func TestNewBrokerBindsThroughHostDeliverer(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	d := &bindingDeliverer{}
	b := NewBroker(h.HostDeliverer(d))
	if len(d.bound) != 1 || d.bound[0] != b {
		t.Fatalf("bound %v, want exactly the new broker %p", d.bound, b)
	}
	direct := NewBroker(d)
	if len(d.bound) != 2 || d.bound[1] != direct {
		t.Fatalf("a direct BrokerBinder was not bound: %v", d.bound)
	}
	NewBroker(h.HostDeliverer(nil)) // nothing to bind: must not panic
}

func TestAnswerValidate(t *testing.T) {
	for _, c := range []struct {
		a     Answer
		field string
	}{
		{Answer{OK: true, Result: json.RawMessage(`{"x":1}`)}, ""},
		{Answer{OK: false, Error: json.RawMessage(`"boom"`)}, ""},
		{Answer{OK: true, Error: json.RawMessage(`"boom"`)}, "error"},
		{Answer{OK: true, Result: json.RawMessage(`{x`)}, "result"},
		{Answer{OK: false, Error: json.RawMessage(`nope`)}, "result"},
	} {
		err := c.a.Validate()
		var fe *canvas.FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.a, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, canvas.ErrInvalid)):
			t.Errorf("%+v: err %v, want an invalid %q", c.a, err, c.field)
		}
	}
}
