package kubeclient

import (
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestNewSpeaksProtobuf checks the headers the clientset sends, and that
// the caller's config is left as it was for the JSON-only clients.
func TestNewSpeaksProtobuf(t *testing.T) {
	var accept, contentType string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept, contentType = r.Header.Get("Accept"), r.Header.Get("Content-Type")
		http.Error(w, "not served", http.StatusNotFound)
	}))
	defer server.Close()

	config := &rest.Config{Host: server.URL}
	client, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if _, err := client.CoreV1().Pods("ns").Create(t.Context(), pod, metav1.CreateOptions{}); err == nil {
		t.Fatal("the test server created a pod")
	}
	if want := runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON; accept != want {
		t.Errorf("Accept = %q, want %q", accept, want)
	}
	if contentType != runtime.ContentTypeProtobuf {
		t.Errorf("Content-Type = %q, want %q", contentType, runtime.ContentTypeProtobuf)
	}
	if config.ContentType != "" || config.AcceptContentTypes != "" {
		t.Errorf("the caller's config changed: %+v", config.ContentConfig)
	}
}
