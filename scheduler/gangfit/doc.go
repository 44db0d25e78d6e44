// Package gangfit serves Kueue's gang-fit AdmissionCheck from the
// scheduler, in every front end: an AdmissionCheck whose controllerName is
// gpuv1alpha1.GangFitControllerName lets a Workload in only when all its
// pods fit the GPUs as they are now, by the placement core's rules over
// the view (view.HoldGang: the same node rules, policies and namespace
// quota as filter and bind), and the scheduler then holds that room until
// the pods are placed or the hold times out.
//
// A Workload whose pods do not fit is sent back to Kueue's queue (check
// state Retry, after options.GangFit.RetryAfter), which releases its quota
// for the Workloads behind it: a queue of jobs that fit the quota but not
// the GPUs' fragments never holds quota while waiting. A Workload with a
// pod that fits no GPU even with every GPU free is Rejected, with the
// reason, and Kueue deactivates it.
//
// Checks are decided one at a time, in the order the Workloads come, and
// each hold is one step under the view's lock, so held room is never
// counted twice. Holds live in the scheduler's memory: after a restart,
// before the scheduler places any pod, the room of each admitted Workload
// whose check is Ready and whose hold has not timed out is held again for
// its pods not yet placed, where they fit now.
package gangfit
