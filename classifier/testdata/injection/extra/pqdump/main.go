package main

import (
	"encoding/json"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Dumps a parquet file with columns text (string) and label (int) as JSON lines.
type rec struct {
	Text  string `parquet:"text" json:"text"`
	Label int64  `parquet:"label" json:"label"`
}

func main() {
	rows, err := parquet.ReadFile[rec](os.Args[1])
	if err != nil {
		panic(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		enc.Encode(r)
	}
}
