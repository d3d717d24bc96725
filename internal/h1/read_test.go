package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// A JSON-RPC answer as Go's net/http server writes it.
const plainAnswer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: 3f2a\r\nDate: Fri, 27 Nov 2026 18:00:00 GMT\r\nContent-Length: 61\r\n\r\n" +
	`{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":"hi!!!!"}}`

var readSeeds = []string{
	plainAnswer,
	plainAnswer + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\ncontent-length:  2 \r\nX-A: 1\r\nx-a: 2\r\nX_b: \t\r\nx-\u00e9: 1\r\n\r\nhi",
	"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi",
	"HTTP/1.1 200\r\nContent-Length: 007\r\n\r\n1234567",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nTrailer: X\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\n\r\nhi",
	"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\n Folded: 1\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
	"HTTP/1.1 200 OK\r\nA: 1\n\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nA : 1\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nA: \x01\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nA: \x7f\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nA: 1\r\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\n:1\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nContent-Length: 2", "HTTP/1.1 200 OK\r\n", "HTTP/1.1", "", "\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + strings.Repeat("x", 5000),
	"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("y", 5000) + "\r\nContent-Length: 2\r\n\r\nhi",
}

// TestReadResponse: what readResponse reads is what http.ReadResponse
// reads, and the plain answer takes the fast path.
func TestReadResponse(t *testing.T) {
	for _, s := range readSeeds {
		for _, size := range []int{16, 64, 4096} {
			sameAsReadResponse(t, []byte(s), "POST", size)
			sameAsReadResponse(t, []byte(s), "HEAD", size)
		}
	}
	resp, err := fastResponse(bufio.NewReader(strings.NewReader(plainAnswer)), &http.Request{Method: "POST"})
	if resp == nil || err != nil {
		t.Fatalf("fastResponse(plain answer) = %v, %v: want the fast path", resp, err)
	}
}

func FuzzReadResponse(f *testing.F) {
	for _, s := range readSeeds {
		f.Add([]byte(s), false, uint16(4096))
	}
	f.Fuzz(func(t *testing.T, b []byte, head bool, size uint16) {
		method := "POST"
		if head {
			method = "HEAD"
		}
		sameAsReadResponse(t, b, method, int(size))
	})
}

// sameAsReadResponse reads every response in b (up to three) with
// readResponse and with http.ReadResponse and compares the responses,
// the errors, the bodies and what is left, reading through a buffer of
// size bytes.
func sameAsReadResponse(t *testing.T, b []byte, method string, size int) {
	t.Helper()
	req := &http.Request{Method: method}
	// Small buffers too, so that heads may be split across them.
	gotR := bufio.NewReaderSize(bytes.NewReader(b), size)
	wantR := bufio.NewReaderSize(bytes.NewReader(b), size)
	for range 3 {
		got, gotErr := readResponse(gotR, req)
		want, wantErr := http.ReadResponse(wantR, req)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: readResponse error %v, http.ReadResponse %v", b, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		gotBody, wantBody := got.Body, want.Body
		got.Body, want.Body = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nreadResponse    %+v\nhttp.ReadResponse %+v", b, got, want)
		}
		if (gotBody == http.NoBody) != (wantBody == http.NoBody) {
			t.Fatalf("%q: readResponse body %T, http.ReadResponse %T", b, gotBody, wantBody)
		}
		g, gErr := readAll(gotBody)
		w, wErr := readAll(wantBody)
		if !bytes.Equal(g, w) || fmt.Sprint(gErr) != fmt.Sprint(wErr) {
			t.Fatalf("%q: body %q (%v), http.ReadResponse %q (%v)", b, g, gErr, w, wErr)
		}
		if gErr != nil || want.Close {
			return
		}
	}
	g, _ := io.ReadAll(gotR)
	w, _ := io.ReadAll(wantR)
	if !bytes.Equal(g, w) {
		t.Fatalf("%q: left %q, http.ReadResponse %q", b, g, w)
	}
}

// readAll reads r to its end in small reads, then once more.
func readAll(r io.Reader) ([]byte, error) {
	var out []byte
	p := make([]byte, 7)
	for {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			if n2, err2 := r.Read(p); n2 != 0 || err2 != err && !(err == io.ErrUnexpectedEOF && err2 == io.EOF) {
				return out, fmt.Errorf("%v, then %d, %v", err, n2, err2)
			}
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
	}
}

// BenchmarkReadResponse reads a JSON-RPC answer's head and body:
// readResponse against http.ReadResponse.
func BenchmarkReadResponse(b *testing.B) {
	req := &http.Request{Method: http.MethodPost}
	rd := strings.NewReader(plainAnswer)
	br := bufio.NewReaderSize(rd, 4096)
	p := make([]byte, 512)
	for _, bb := range []struct {
		name string
		read func(*bufio.Reader, *http.Request) (*http.Response, error)
	}{{"readResponse", readResponse}, {"ReadResponse", http.ReadResponse}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(plainAnswer)
				br.Reset(rd)
				resp, err := bb.read(br, req)
				if err != nil {
					b.Fatal(err)
				}
				for err == nil {
					_, err = resp.Body.Read(p)
				}
				if err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}
