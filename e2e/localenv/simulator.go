package localenv

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// The annotations, on a Pod (or its template), that shape the simulation.
const (
	StartSecondsAnnotation = "local.plumb.dev/start-seconds"
	RunSecondsAnnotation   = "local.plumb.dev/run-seconds"
	ExitCodeAnnotation     = "local.plumb.dev/exit-code"
)

// podSimulator plays the kubelet's part for Pods: it moves them through
// their phases by writing the status subresource, never binding them to a
// Node. See the package documentation.
type podSimulator struct {
	client  kubernetes.Interface
	lister  cache.Indexer
	queue   workqueue.TypedDelayingInterface[string]
	log     io.Writer
	nextIP  atomic.Uint32
	started chan struct{}
}

func newPodSimulator(cfg *rest.Config, log io.Writer) (*podSimulator, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &podSimulator{client: cs, log: log, started: make(chan struct{})}, nil
}

// run watches Pods in every namespace until ctx ends.
func (s *podSimulator) run(ctx context.Context) {
	factory := informers.NewSharedInformerFactory(s.client, 0)
	informer := factory.Core().V1().Pods().Informer()
	s.lister = informer.GetIndexer()
	s.queue = workqueue.NewTypedDelayingQueue[string]()
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
	close(s.started)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		after, err := s.sync(ctx, key)
		if err != nil && ctx.Err() == nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				fmt.Fprintf(s.log, "pod simulator: %s: %v\n", key, err)
			}
			after = 200 * time.Millisecond
		}
		if after > 0 {
			s.queue.AddAfter(key, after)
		}
		s.queue.Done(key)
	}
}

// sync moves one Pod one step on and returns when to look at it again.
func (s *podSimulator) sync(ctx context.Context, key string) (time.Duration, error) {
	item, exists, err := s.lister.GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	pod := item.(*corev1.Pod)
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, nil
	}
	now := time.Now()
	job := runsToCompletion(pod)
	switch pod.Status.Phase {
	case "", corev1.PodPending:
		startAt := pod.CreationTimestamp.Add(annotationDuration(pod, StartSecondsAnnotation, 0))
		if wait := startAt.Sub(now); wait > 0 {
			return wait, nil
		}
		updated := pod.DeepCopy()
		s.markRunning(updated, now)
		if _, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
		fmt.Fprintf(s.log, "pod simulator: %s Running\n", key)
		if job {
			return annotationDuration(pod, RunSecondsAnnotation, time.Second), nil
		}
		return 0, nil
	case corev1.PodRunning:
		if !job {
			return 0, nil
		}
		started := now
		if pod.Status.StartTime != nil {
			started = pod.Status.StartTime.Time
		}
		if wait := started.Add(annotationDuration(pod, RunSecondsAnnotation, time.Second)).Sub(now); wait > 0 {
			return wait, nil
		}
		updated := pod.DeepCopy()
		code, _ := strconv.Atoi(pod.Annotations[ExitCodeAnnotation])
		markFinished(updated, now, int32(code))
		if _, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
		fmt.Fprintf(s.log, "pod simulator: %s %s\n", key, updated.Status.Phase)
	}
	return 0, nil
}

// runsToCompletion reports whether the Pod ends by itself: a Job's, or one
// whose restartPolicy is not Always (a Helm chart's test Pod, a bare hook
// Pod), which the kubelet would mark Succeeded or Failed when its
// containers exit.
func runsToCompletion(pod *corev1.Pod) bool {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever || pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
		return true
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" {
		return true
	}
	_, ok := pod.Labels["batch.kubernetes.io/job-name"]
	return ok
}

func annotationDuration(pod *corev1.Pod, name string, def time.Duration) time.Duration {
	v, ok := pod.Annotations[name]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return def
	}
	return time.Duration(f * float64(time.Second))
}

func condition(t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now}
}

// markRunning writes what a kubelet reports once every container started
// and passed its readiness probe.
func (s *podSimulator) markRunning(pod *corev1.Pod, at time.Time) {
	now := metav1.NewTime(at)
	n := s.nextIP.Add(1)
	ip := fmt.Sprintf("10.244.%d.%d", (n/250)%250, n%250+2)
	st := &pod.Status
	st.Phase = corev1.PodRunning
	st.StartTime = &now
	st.HostIP, st.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	st.Conditions = []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", now),
		condition(corev1.PodInitialized, corev1.ConditionTrue, "", now),
		condition(corev1.ContainersReady, corev1.ConditionTrue, "", now),
		condition(corev1.PodReady, corev1.ConditionTrue, "", now),
		condition(corev1.PodScheduled, corev1.ConditionTrue, "", now),
	}
	started := true
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "simulated://" + c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "simulated://" + c.Image, Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

// markFinished writes what a kubelet reports when a Job's Pod's containers
// exited with code.
func markFinished(pod *corev1.Pod, at time.Time, code int32) {
	now := metav1.NewTime(at)
	st := &pod.Status
	reason := "Completed"
	st.Phase = corev1.PodSucceeded
	if code != 0 {
		st.Phase, reason = corev1.PodFailed, "Error"
	}
	started := now
	if st.StartTime != nil {
		started = *st.StartTime
	}
	for i := range st.Conditions {
		switch st.Conditions[i].Type {
		case corev1.PodReady, corev1.ContainersReady:
			st.Conditions[i] = condition(st.Conditions[i].Type, corev1.ConditionFalse, "PodCompleted", now)
		case corev1.PodReadyToStartContainers:
			st.Conditions[i] = condition(st.Conditions[i].Type, corev1.ConditionFalse, "", now)
		}
	}
	notStarted := false
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = false, &notStarted
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now,
		}}
	}
}
