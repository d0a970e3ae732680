package motoserver

import (
	"net/http"
	"testing"
)

func TestStartResetClose(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err) // never a skip: CI must have moto
	}
	if err := s.Reset(); err != nil {
		t.Error(err)
	}
	s.Close()
	if _, err := http.Get(s.URL + "/moto-api/"); err == nil {
		t.Error("server still answers after Close")
	}
}
