package api

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/canvasd/canvasd/store"
)

// jsonCanvasFile is a JSON Canvas file of n text nodes in a grid, with an
// edge from every node to its right-hand neighbour.
func jsonCanvasFile(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"nodes":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"n%d","type":"text","text":"Card %d\nwith two lines","x":%d,"y":%d,"width":200,"height":100,"color":"%d"}`,
			i, i, (i%100)*260, (i/100)*160, 1+i%6)
	}
	b.WriteString(`],"edges":[`)
	first := true
	for i := 0; i+1 < n; i++ {
		if i%100 == 99 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, `{"id":"e%d","fromNode":"n%d","fromSide":"right","toNode":"n%d","toSide":"left","label":"next"}`, i, i, i+1)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkImportJSONCanvas5000 imports a JSON Canvas file of 5,000 nodes
// and 4,950 edges over HTTP into a new canvas, end to end (read, checked,
// one commit on disk, answered): target ≤ 500 ms.
func BenchmarkImportJSONCanvas5000(b *testing.B) {
	store.TuneGC() // as the server runs
	e := newTestEnv(b)
	file := jsonCanvasFile(5000)
	c := benchClient()
	var ms []time.Duration
	cpu0 := processCPU()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	alloc0 := mem.TotalAlloc
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("imp%d", i)
		e.canvas(id)
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvases/"+id+"/import?format=jsoncanvas", bytes.NewReader(file))
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		resp.Body.Close()
		ms = append(ms, time.Since(t0))
		if resp.StatusCode != 200 {
			b.Fatalf("import: %d %s", resp.StatusCode, out.Bytes())
		}
	}
	runtime.ReadMemStats(&mem)
	b.ReportMetric(float64(percentile(ms, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(len(ms))/1e6, "cpu-ms/op")
	b.ReportMetric(float64(mem.TotalAlloc-alloc0)/float64(len(ms))/(1<<20), "alloc-MiB/op")
	b.ReportMetric(float64(len(file))/(1<<20), "file-MiB")
}
