package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/e2e/localenv"
)

// plumbRound writes the next tag and, with webhook, posts the registry's
// push webhook, then waits for every stage.
func (b *bench) plumbRound(ctx context.Context, t *tracker, webhook bool) (*round, error) {
	r, err := b.begin(ctx, t)
	if err != nil {
		return &round{tag: "?"}, err
	}
	if _, err := b.tagImage(ctx); err != nil {
		return r, err
	}
	if webhook {
		if err := b.postWebhook(ctx, r.tag); err != nil {
			return r, err
		}
	}
	return r, b.wait(ctx, t, r)
}

// postWebhook sends the registry's push webhook, as Docker Hub sends it.
func (b *bench) postWebhook(ctx context.Context, tag string) error {
	body := localenv.RegistryPushPayload(b.demo.WebImage, tag)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.demo.RegistryWebhookURL, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("the registry Receiver answered %s", resp.Status)
	}
	return nil
}

// intervalRound sets the ImageRepository's interval, waits for the scan
// that change makes, and then writes a tag without a webhook: it waits
// for the next scan, a whole interval.
func (b *bench) intervalRound(ctx context.Context, t *tracker) (*round, error) {
	key := types.NamespacedName{Namespace: b.demo.Namespace, Name: localenv.DemoImageName}
	repo := &imagev1.ImageRepository{}
	if err := b.env.Client.Get(ctx, key, repo); err != nil {
		return nil, err
	}
	lastScan := scanTime(repo)
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Interval.Duration = b.c.scanInterval
	if err := b.env.Client.Patch(ctx, repo, patch); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(b.c.roundTimeout)
	for {
		if err := b.env.Client.Get(ctx, key, repo); err != nil {
			return nil, err
		}
		if repo.Status.ObservedGeneration == repo.Generation && scanTime(repo).After(lastScan) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the ImageRepository did not scan after its interval changed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return b.plumbRound(ctx, t, false)
}

func scanTime(repo *imagev1.ImageRepository) time.Time {
	if repo.Status.LastScanResult == nil {
		return time.Time{}
	}
	return repo.Status.LastScanResult.ScanTime.Time
}
