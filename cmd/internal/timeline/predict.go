package timeline

import "math"

// predictLayers prices each layer with the cost model of core/planning (a message of s bytes
// takes overhead + s/rate one way; merge, combine and gather cost their measured ns per key),
// fed with what each rank's plans actually held and moved (the kylix_stats record a rank
// writes at finalize) instead of Proposition 4.1's expectation: the model's time for the job's
// own volume, mean per rank, in µs. Nil when no rank measured its links (degrees=auto without
// min_packet measures them at the first config).
func predictLayers(ranks []*Rank) []float64 {
	var sum []float64
	n := 0
	for _, r := range ranks {
		links, _ := r.Stats["links"].(map[string]any)
		if links == nil || num(links["bytes_per_s"]) <= 0 {
			continue
		}
		over, bw := num(links["overhead_s"]), num(links["bytes_per_s"])
		rates, _ := links["compute_rates"].(map[string]any)
		merge, combine, gather := num(rates["merge_ns"]), num(rates["combine_ns"]), num(rates["gather_ns"])
		plans, _ := r.Stats["plans"].([]any)
		n++
		for _, pv := range plans {
			p, _ := pv.(map[string]any)
			calls, _ := p["calls"].(map[string]any)
			cfg := num(calls["config"]) + num(calls["config_reduce"])
			red := num(calls["reduce"]) + num(calls["config_reduce"])
			layers, _ := p["layers"].([]any)
			for _, lv := range layers {
				l, _ := lv.(map[string]any)
				i := int(num(l["layer"]))
				for len(sum) <= i {
					sum = append(sum, 0)
				}
				d := num(l["degree"])
				msgs := d - 1
				sent := func(k string) float64 {
					t, _ := l[k].(map[string]any)
					return num(t["bytes_sent"])
				}
				netS := cfg*msgs*over + (sent("config")+sent("config_reduce_down"))/bw +
					red*2*msgs*over + (sent("reduce_down")+sent("reduce_up")+sent("config_reduce_up"))/bw
				cpuNs := cfg*num(l["out_keys_above"])*math.Ceil(math.Log2(max(d, 2)))*merge +
					red*(num(l["out_keys_above"])*combine+(num(l["in_keys_above"])+num(l["in_keys_below"]))*gather)
				sum[i] += netS*1e6 + cpuNs/1e3
			}
		}
	}
	if n == 0 {
		return nil
	}
	for i := range sum {
		sum[i] /= float64(n)
	}
	return sum
}
