package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// PathEnv is the variable shell-operator sets to the file a hook writes its metric operations to.
const PathEnv = "METRICS_PATH"

// File collects one run's measurements and, on Flush, adds them to the hook's running totals and
// writes those totals as shell-operator metric operations (see the package comment for why).
type File struct {
	mu     sync.Mutex
	series map[string]*series
	// byID finds a series again without building its labels and key (seriesID).
	byID map[seriesID]*series
	errs []error
}

// NewFile starts recording one run.
func NewFile() *File {
	return &File{series: map[string]*series{}, byID: map[seriesID]*series{}}
}

// seriesID names a series of a metric with at most maxIDLabels labels, by its label values in the
// metric's own order. Recording runs per CR and per OpenStack request; building a labels map and
// a sorted key for each cost more than the count it adds to.
type seriesID struct {
	def    *Def
	typ    Type
	values [maxIDLabels]string
}

const maxIDLabels = 4

// series is one labelled time series, or one labelled histogram.
type series struct {
	Name   string            `json:"name"`
	Type   Type              `json:"type"`
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value,omitempty"`
	// Bounds are a histogram's bucket upper bounds; Counts has one more entry (+Inf), each the
	// observations in that bucket alone.
	Bounds []float64 `json:"bounds,omitempty"`
	Counts []uint64  `json:"counts,omitempty"`
	Count  uint64    `json:"count,omitempty"`
	Sum    float64   `json:"sum,omitempty"`
}

func seriesKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + labels[k])
	}
	return b.String()
}

func (f *File) get(d *Def, t Type, values []string) *series {
	if err := check(d, t, values); err != nil {
		f.errs = append(f.errs, err)
		return nil
	}
	id, fast := seriesID{def: d, typ: t}, len(values) <= maxIDLabels
	if fast {
		copy(id.values[:], values)
		if s := f.byID[id]; s != nil {
			return s
		}
	}
	labels := make(map[string]string, len(values))
	for i, n := range d.Labels {
		labels[n] = values[i]
	}
	k := seriesKey(d.Name, labels)
	s := f.series[k]
	if s == nil {
		s = &series{Name: d.Name, Type: t, Labels: labels}
		if t == Histogram {
			s.Bounds = d.Buckets
			s.Counts = make([]uint64, len(d.Buckets)+1)
		}
		f.series[k] = s
	}
	if fast {
		f.byID[id] = s
	}
	return s
}

// Add increases a counter.
func (f *File) Add(d *Def, v float64, labels ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.get(d, Counter, labels); s != nil && v > 0 {
		s.Value += v
	}
}

// Set sets a gauge.
func (f *File) Set(d *Def, v float64, labels ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.get(d, Gauge, labels); s != nil {
		s.Value = v
	}
}

// Observe records one histogram observation.
func (f *File) Observe(d *Def, v float64, labels ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.get(d, Histogram, labels); s != nil && !math.IsNaN(v) {
		i, _ := slices.BinarySearch(s.Bounds, v)
		s.Counts[i]++
		s.Count++
		s.Sum += v
	}
}

// state is the hook's running totals between runs.
type state struct {
	Version int       `json:"version"`
	Series  []*series `json:"series"`
}

const stateVersion = 1

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// StatePath is where the totals of group are kept for the metrics file at metricsPath.
func StatePath(metricsPath, group string) string {
	return filepath.Join(filepath.Dir(metricsPath), "openstack-sync-metrics-"+unsafeName.ReplaceAllString(group, "_")+".json")
}

// Flush adds this run's measurements to the totals of group kept beside metricsPath and writes the
// totals to metricsPath. group is the hook's metric group: one per hook, because shell-operator
// expires a group as a whole, so two hooks sharing one would erase each other's numbers. An empty
// metricsPath (not run by shell-operator) writes nothing. A recording mistake (wrong labels) is
// returned after everything else was written.
func (f *File) Flush(metricsPath, group string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := f.errs
	if metricsPath == "" {
		return errors.Join(errs...)
	}
	statePath := StatePath(metricsPath, group)
	// shell-operator runs one hook at a time per queue, but a hook with bindings on two queues
	// can run twice at once: the lock keeps one run's totals from overwriting the other's.
	lock, err := os.OpenFile(statePath+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("metrics: %w", err))...)
	}
	defer lock.Close()
	if err := lockFile(lock); err != nil {
		return errors.Join(append(errs, fmt.Errorf("metrics: locking %s: %w", lock.Name(), err))...)
	}
	total, err := readState(statePath)
	if err != nil {
		// Lost totals only reset the counters, as a pod restart would; the run still reports.
		errs = append(errs, err)
		total = map[string]*series{}
	}
	for k, s := range f.series {
		total[k] = merge(total[k], s)
	}
	if err := writeState(statePath, total); err != nil {
		errs = append(errs, err)
	}
	if err := os.WriteFile(metricsPath, operations(group, total), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("metrics: writing %s: %w", metricsPath, err))
	}
	return errors.Join(errs...)
}

// merge adds one run's series to the running total.
func merge(total, run *series) *series {
	if total == nil || total.Type != run.Type {
		return run
	}
	switch run.Type {
	case Counter:
		total.Value += run.Value
	case Gauge:
		total.Value = run.Value
	case Histogram:
		if !slices.Equal(total.Bounds, run.Bounds) || len(total.Counts) != len(run.Counts) {
			// The buckets changed with the host's version: the old counts cannot be re-bucketed.
			return run
		}
		for i, c := range run.Counts {
			total.Counts[i] += c
		}
		total.Count += run.Count
		total.Sum += run.Sum
	}
	return total
}

func readState(path string) (map[string]*series, error) {
	out := map[string]*series{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: reading the totals: %w", err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil || st.Version != stateVersion {
		return nil, fmt.Errorf("metrics: %s is not a version %d totals file; starting the totals over", path, stateVersion)
	}
	for _, s := range st.Series {
		if s == nil || s.Name == "" || (s.Type == Histogram && len(s.Counts) != len(s.Bounds)+1) {
			continue
		}
		out[seriesKey(s.Name, s.Labels)] = s
	}
	return out, nil
}

func writeState(path string, total map[string]*series) error {
	st := state{Version: stateVersion, Series: sortedSeries(total)}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("metrics: writing the totals: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("metrics: writing the totals: %w", err)
	}
	return nil
}

func sortedSeries(m map[string]*series) []*series {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*series, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// operation is one line of shell-operator's metrics file.
type operation struct {
	Name   string            `json:"name"`
	Group  string            `json:"group"`
	Action string            `json:"action"`
	Value  float64           `json:"value"`
	Labels map[string]string `json:"labels"`
}

// operations renders the totals as JSON lines. shell-operator stores counter values as whole
// numbers, so a histogram's float _sum is a gauge set to the running sum.
func operations(group string, total map[string]*series) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	emit := func(name, action string, v float64, labels map[string]string) {
		_ = enc.Encode(operation{Name: name, Group: group, Action: action, Value: v, Labels: labels})
	}
	for _, s := range sortedSeries(total) {
		switch s.Type {
		case Counter:
			emit(s.Name, "add", s.Value, s.Labels)
		case Gauge:
			emit(s.Name, "set", s.Value, s.Labels)
		case Histogram:
			var cum uint64
			for i, c := range s.Counts {
				cum += c
				le := "+Inf"
				if i < len(s.Bounds) {
					le = strconv.FormatFloat(s.Bounds[i], 'g', -1, 64)
				}
				emit(s.Name+"_bucket", "add", float64(cum), withLabel(s.Labels, "le", le))
			}
			emit(s.Name+"_count", "add", float64(s.Count), s.Labels)
			emit(s.Name+"_sum", "set", s.Sum, s.Labels)
		}
	}
	return buf.Bytes()
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for lk, lv := range labels {
		out[lk] = lv
	}
	out[k] = v
	return out
}
