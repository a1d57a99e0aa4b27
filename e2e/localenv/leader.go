package localenv

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
)

// leaderMetric is client-go's gauge of leadership, which
// controller-runtime registers: 1 while the process holds the Lease
// named by its label "name".
const leaderMetric = "leader_election_master_status"

// Instances returns the processes of name (a controller of a shard, as
// ShardName names it): the one, or the leader and its standby for the
// controllers of Options.Standbys.
func (e *Env) Instances(name string) []*Controller {
	var out []*Controller
	for _, n := range []string{name, name + StandbySuffix} {
		if c := e.Controllers[n]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Leader returns the process of name that holds its Lease, nil when none
// does (the leader died and its standby has not taken over yet), or an
// error when name does not elect. Each process says so itself, on its
// /metrics: the Lease's holderIdentity is the host name and a random
// suffix, which does not name a process.
func (e *Env) Leader(ctx context.Context, name string) (*Controller, error) {
	instances := e.Instances(name)
	if len(instances) == 0 || !instances[0].Elects {
		return nil, fmt.Errorf("%s runs without leader election (Options.Standbys)", name)
	}
	for _, c := range instances {
		if !c.Running() {
			continue
		}
		leads, err := c.leads(ctx)
		if err != nil {
			continue // starting, or gone meanwhile: not the leader
		}
		if leads {
			return c, nil
		}
	}
	return nil, nil
}

// WaitLeader waits until a process of name holds its Lease, for as long
// as ctx allows.
func (e *Env) WaitLeader(ctx context.Context, name string) (*Controller, error) {
	for {
		c, err := e.Leader(ctx, name)
		if err != nil || c != nil {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no process of %s holds the Lease %s/%s: %w", name, LeaseNamespace, e.Instances(name)[0].Lease, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Lease reads the Lease that name's processes elect on.
func (e *Env) Lease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	instances := e.Instances(name)
	if len(instances) == 0 || !instances[0].Elects {
		return nil, fmt.Errorf("%s runs without leader election (Options.Standbys)", name)
	}
	lease := &coordinationv1.Lease{}
	err := e.Client.Get(ctx, types.NamespacedName{Namespace: LeaseNamespace, Name: instances[0].Lease}, lease)
	return lease, err
}

// leads reports whether the process's /metrics says it holds its Lease.
func (c *Controller) leads(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.MetricsAddr+"/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /metrics of %s: %s", c.Name, resp.Status)
	}
	want := fmt.Sprintf(`%s{name=%q} `, leaderMetric, c.Lease)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, sc.Err()
}
