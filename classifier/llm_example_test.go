package classifier_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/intercept"
)

// An OpenAI-compatible server (here a stand-in for Ollama) classifies a
// call; the second identical call, from another session, is a cache hit.
func ExampleLLM() {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":`+
			`"{\"axes\":{\"action_type\":{\"classified\":\"Read\",\"confidence\":0.95},`+
			`\"boundary\":{\"classified\":\"Local\",\"confidence\":1}},`+
			`\"capability_class_verdict\":\"\",\"capability_class_confidence\":0.5,`+
			`\"composite_confidence\":0.9,\"consistent_with_declaration\":true}"}}]}`)
	}))
	defer srv.Close()

	llm, err := classifier.NewLLM(classifier.LLMOptions{
		Provider: classifier.ProviderOpenAI,
		BaseURL:  srv.URL, // e.g. http://127.0.0.1:11434 for Ollama
		Model:    "llama3.2:3b",
		Timeout:  time.Second,
		Now:      func() time.Time { return time.Unix(1746000124, 0) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := llm.Probe(context.Background()); err != nil {
		fmt.Println(err) // inactive: every verdict would have composite 0
	}
	for _, session := range []string{"s1", "s2"} {
		v, err := llm.Classify(context.Background(), &intercept.ActionDescriptor{
			ToolName:       "read_file",
			Parameters:     jsontext.Value(`{"path":"/tmp/notes.txt"}`),
			TargetEndpoint: "stdio",
			SessionID:      session,
		})
		if err != nil {
			fmt.Println(err)
		}
		fmt.Printf("%s %s %s %.2f %s\n", v.SessionID, v.Axes.Get(classifier.AxisActionType).Classified,
			v.Axes.Get(classifier.AxisBoundary).Classified, v.CompositeConfidence, v.ClassifierID)
	}
	fmt.Println("requests:", requests.Load())
	// Output:
	// s1 Read Local 0.97 urn:sluice:classifier:llm-openai:s1
	// s2 Read Local 0.97 urn:sluice:classifier:llm-openai:s2
	// requests: 2
}
