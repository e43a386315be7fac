// A mutating webhook that answers every review "allowed, unchanged" at once, in Go: the
// floor of the API server calling any webhook on this machine, whatever its language
// (bench/scale.py --webhook noop-go builds and starts it). Standard library only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
)

type review struct {
	APIVersion string `json:"apiVersion"`
	Request    struct {
		UID string `json:"uid"`
	} `json:"request"`
}

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1")
	dir := flag.String("tls-dir", "", "directory holding tls.crt and tls.key")
	flag.Parse()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": in.APIVersion, "kind": "AdmissionReview",
			"response": map[string]any{"uid": in.Request.UID, "allowed": true},
		})
	})
	addr := fmt.Sprintf("127.0.0.1:%d", *port)
	log.Fatal(http.ListenAndServeTLS(addr, *dir+"/tls.crt", *dir+"/tls.key", nil))
}
