package telemetry

import (
	"cmp"
	"slices"
	"time"
)

// Quantiles are latency percentiles in milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
}

// Bucket is one slice of time in a summary's series.
type Bucket struct {
	Start    time.Time `json:"start"`
	Requests int       `json:"requests"`
	Errors   int       `json:"errors"`
	// ClientErrors are the errors among Errors that were the client's
	// to fix (ClientError).
	ClientErrors int       `json:"client_errors"`
	TTFT         Quantiles `json:"ttft"`
	Total        Quantiles `json:"total"`
	Tokens       Tokens    `json:"tokens"`
	Cost         float64   `json:"cost_usd"`
}

// Group is a figure broken down by one name (a day, a model, a client, an
// error type, a verdict).
type Group struct {
	Name     string  `json:"name"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Tokens   Tokens  `json:"tokens"`
	Cost     float64 `json:"cost_usd"`
}

// Totals are counts over a span of records.
type Totals struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// ClientErrors are the errors among Errors that were the client's to
	// fix (ClientError); the rest failed in the gateway or upstream.
	ClientErrors int     `json:"client_errors"`
	Replays      int     `json:"replays"`
	Tokens       Tokens  `json:"tokens"`
	Cost         float64 `json:"cost_usd"`
	// Unpriced counts requests whose model has no known price: their cost
	// is not in Cost.
	Unpriced int `json:"unpriced"`
}

// Failures are the errors that were not the client's to fix: the
// gateway's and the upstream's.
func (t Totals) Failures() int { return t.Errors - t.ClientErrors }

// Add counts one record.
func (t *Totals) Add(r Record) {
	t.Requests++
	if Failed(r) {
		t.Errors++
		if ClientError(r.Status) {
			t.ClientErrors++
		}
	}
	if r.Replay {
		t.Replays++
	}
	t.Tokens = t.Tokens.Add(r.Tokens)
	if r.Cost >= 0 {
		t.Cost += r.Cost
	} else {
		t.Unpriced++
	}
}

// Summary is what the dashboard shows for a window of time.
type Summary struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Totals Totals    `json:"totals"`
	// CacheHitRatio is the share of prompt tokens read from the cache.
	CacheHitRatio float64 `json:"cache_hit_ratio"`
	// LiveRatio is the share of continued conversations' turns that ran
	// on their live process.
	LiveRatio float64   `json:"live_ratio"`
	TTFT      Quantiles `json:"ttft"`
	Total     Quantiles `json:"total"`
	// CacheMisses counts continuations that read nothing from the cache.
	CacheMisses   int      `json:"continuations_missing_cache"`
	BucketSeconds int64    `json:"bucket_seconds"`
	Series        []Bucket `json:"series"`
	ByDay         []Group  `json:"by_day"`
	ByModel       []Group  `json:"by_model"`
	ByClient      []Group  `json:"by_client"`
	ByAPI         []Group  `json:"by_api"`
	// ByKey groups by the API key's name ("" for the admin key or none).
	ByKey []Group `json:"by_key"`
	// ByHost groups by the host that served each request: every host
	// sharing the store.
	ByHost []Group `json:"by_host"`
	// Errors are the gateway's and the upstream's failures by type;
	// ClientErrors the errors that were the client's to fix.
	Errors       []Group `json:"errors_by_type"`
	ClientErrors []Group `json:"client_errors_by_type"`
	Verdicts     []Group `json:"verdicts"`
}

// MissedCache says whether a record is a successful continuation that
// read nothing from the prompt cache: the case worth a look.
func MissedCache(r Record) bool {
	return r.Verdict == "continuation" && r.Status == 200 && !r.Replay && r.Tokens.CacheRead == 0
}

// Summarize computes the figures of the records that fall in [from, to),
// with a series of about buckets slices. loc decides where a day begins.
func Summarize(records []Record, from, to time.Time, buckets int, loc *time.Location) Summary {
	s := Summary{From: from, To: to}
	if buckets < 1 {
		buckets = 1
	}
	size := max(to.Sub(from)/time.Duration(buckets), time.Minute).Round(time.Minute)
	s.BucketSeconds = int64(size / time.Second)
	n := int(to.Sub(from)/size) + 1
	s.Series = make([]Bucket, n)
	ttfts, totals := make([][]float64, n), make([][]float64, n)
	for i := range s.Series {
		s.Series[i].Start = from.Add(time.Duration(i) * size)
	}
	var allTTFT, allTotal []float64
	days, models, clients, apis, hosts, verdicts, keys := groups{}, groups{}, groups{}, groups{}, groups{}, groups{}, groups{}
	errs, clientErrs := groups{}, groups{}
	var continued, live int
	var prompt, cached int64
	for _, r := range records {
		if r.Time.Before(from) || !r.Time.Before(to) {
			continue
		}
		s.Totals.Add(r)
		i := int(r.Time.Sub(from) / size)
		b := &s.Series[i]
		b.Requests++
		failed := Failed(r)
		switch {
		case failed && ClientError(r.Status):
			b.Errors++
			b.ClientErrors++
			clientErrs.add(cmp.Or(r.ErrorType, "unknown"), r)
		case failed:
			b.Errors++
			errs.add(cmp.Or(r.ErrorType, "unknown"), r)
		}
		b.Tokens = b.Tokens.Add(r.Tokens)
		if r.Cost > 0 {
			b.Cost += r.Cost
		}
		if r.TTFT > 0 {
			ms := float64(r.TTFT) / 1e6
			ttfts[i] = append(ttfts[i], ms)
			allTTFT = append(allTTFT, ms)
		}
		if !failed {
			ms := float64(r.Total) / 1e6
			totals[i] = append(totals[i], ms)
			allTotal = append(allTotal, ms)
		}
		days.add(r.Time.In(loc).Format(time.DateOnly), r)
		models.add(cmp.Or(r.Effective, r.Model, "unknown"), r)
		clients.add(cmp.Or(r.Client, "unknown"), r)
		apis.add(r.API, r)
		keys.add(r.Key, r)
		hosts.add(cmp.Or(r.Host, "unknown"), r)
		if r.Verdict != "" {
			verdicts.add(r.Verdict, r)
			if r.Verdict == "continuation" {
				continued++
				if r.Live {
					live++
				}
			}
		}
		if MissedCache(r) {
			s.CacheMisses++
		}
		prompt += r.Tokens.Input + r.Tokens.CacheRead + r.Tokens.CacheWrite
		cached += r.Tokens.CacheRead
	}
	for i := range s.Series {
		s.Series[i].TTFT, s.Series[i].Total = quantiles(ttfts[i]), quantiles(totals[i])
	}
	s.TTFT, s.Total = quantiles(allTTFT), quantiles(allTotal)
	if prompt > 0 {
		s.CacheHitRatio = float64(cached) / float64(prompt)
	}
	if continued > 0 {
		s.LiveRatio = float64(live) / float64(continued)
	}
	s.ByDay = days.byName()
	s.ByModel, s.ByClient, s.ByAPI, s.ByHost, s.ByKey = models.byCost(), clients.byCost(), apis.byCost(), hosts.byCost(), keys.byCost()
	s.Errors, s.ClientErrors, s.Verdicts = errs.byCount(), clientErrs.byCount(), verdicts.byCount()
	return s
}

type groups map[string]*Group

func (g groups) add(name string, r Record) {
	x := g[name]
	if x == nil {
		x = &Group{Name: name}
		g[name] = x
	}
	x.Requests++
	if Failed(r) {
		x.Errors++
	}
	x.Tokens = x.Tokens.Add(r.Tokens)
	if r.Cost > 0 {
		x.Cost += r.Cost
	}
}

func (g groups) list() []Group {
	out := make([]Group, 0, len(g))
	for _, x := range g {
		out = append(out, *x)
	}
	return out
}

func (g groups) byName() []Group {
	out := g.list()
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (g groups) byCost() []Group {
	out := g.list()
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (g groups) byCount() []Group {
	out := g.list()
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// quantiles takes the nearest-rank p50 and p95 of values.
func quantiles(values []float64) Quantiles {
	if len(values) == 0 {
		return Quantiles{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	rank := func(p float64) float64 {
		i := int(p*float64(len(v))+0.999999) - 1
		return v[min(max(i, 0), len(v)-1)]
	}
	return Quantiles{P50: rank(0.50), P95: rank(0.95)}
}
