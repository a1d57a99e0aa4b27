package main

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// fakeAPI is an API server holding ConfigMaps in one namespace, checking
// the bearer token and answering server-side apply as the real one does
// for the fields the hook writes.
type fakeAPI struct {
	mu      sync.Mutex
	data    map[string]map[string]string
	applies []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer secret-token" {
		http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	name := r.PathValue("name")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		d, ok := f.data[name]
		if !ok {
			http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": d})
	case http.MethodPatch:
		if r.Header.Get("Content-Type") != "application/apply-patch+yaml" || r.URL.Query().Get("fieldManager") != fieldManager {
			http.Error(w, `{"message":"want server-side apply"}`, http.StatusBadRequest)
			return
		}
		var obj struct{ Data map[string]string }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.applies = append(f.applies, name)
		if f.data[name] == nil {
			f.data[name] = map[string]string{}
		}
		for k, v := range obj.Data {
			f.data[name][k] = v
		}
		_ = json.NewEncoder(w).Encode(obj)
	}
}

// serviceAccount writes what the kubelet mounts into a Pod.
func serviceAccount(t *testing.T, srv *httptest.Server, token string) string {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, content := range map[string][]byte{"token": []byte(token + "\n"), "namespace": []byte("app"), "ca.crt": ca} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTheHookRecordsTheMigrationInAConfigMapWithTheServiceAccount(t *testing.T) {
	api := &fakeAPI{data: map[string]map[string]string{"schema": {"schema": "1", "other": "kept"}}}
	mux := http.NewServeMux()
	mux.Handle("/api/v1/namespaces/app/configmaps/{name}", api)
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	sa := serviceAccount(t, srv, "secret-token")

	code, err := run([]string{"-steps=2", "-step-duration=0", "-to=2", "-configmap=schema", "-api-server=" + srv.URL, "-serviceaccount-dir=" + sa, "-exit-code=4"})
	if err != nil || code != 4 {
		t.Fatalf("run = %d, %v; want exit code 4 after the migration", code, err)
	}
	if got := api.data["schema"]; got["schema"] != "2" || got["other"] != "kept" {
		t.Fatalf("ConfigMap data %v, want schema 2 and the other key kept", got)
	}

	// A token the API server refuses fails the hook with its answer, and
	// nothing is written.
	api.applies = nil
	bad := serviceAccount(t, srv, "wrong")
	if _, err := run([]string{"-steps=0", "-configmap=schema", "-api-server=" + srv.URL, "-serviceaccount-dir=" + bad}); err == nil {
		t.Fatal("run with a refused token succeeded")
	}
	if len(api.applies) != 0 {
		t.Fatalf("applied %v with a refused token", api.applies)
	}
}

func TestTheHookRefusesUnboundedSteps(t *testing.T) {
	for _, args := range [][]string{{"-steps=1000000"}, {"-step-duration=24h"}, {"-exit-code=300"}} {
		if _, err := run(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
