package clusters

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/hub"
)

// errorClass sorts an error by what it means for the cluster's health.
type errorClass int

const (
	classOther errorClass = iota
	// classNetwork: the apiserver could not be reached (refused, timeout,
	// DNS): counts towards unreachable.
	classNetwork
	// classAuth: the apiserver answered 401: the credentials are wrong.
	classAuth
	// classForbidden: RBAC denied a verb.
	classForbidden
	// classTerminating: the apiserver takes no new object where the write
	// goes until a deletion in progress ends (see terminating): neither a
	// denial nor a fault of the cluster.
	classTerminating
	// classTLS: the certificate could not be verified.
	classTLS
	// classThrottled: the apiserver still answered 429 Too Many Requests
	// (APF or max-in-flight) after client-go's Retry-After retries, or when
	// the call's deadline left no time for the next one (see
	// limitedTransport). The server is up and shedding load: never
	// unreachable; the caller backs off as after any failure.
	classThrottled
)

func classify(err error) errorClass {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	switch {
	case err == nil:
		return classOther
	case apierrors.IsUnauthorized(err):
		return classAuth
	case terminating(err) != "":
		return classTerminating
	case apierrors.IsForbidden(err):
		return classForbidden
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &certInvalid),
		strings.Contains(err.Error(), "x509:"), strings.Contains(err.Error(), "tls:"):
		return classTLS
	case apierrors.IsTooManyRequests(err):
		return classThrottled
	}
	var netErr net.Error
	var urlErr *url.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &opErr),
		errors.As(err, &netErr), errors.As(err, &urlErr),
		strings.Contains(err.Error(), "connection refused"),
		strings.Contains(err.Error(), "EOF"):
		return classNetwork
	}
	return classOther
}

// terminating says which deletion in progress made the apiserver refuse
// a write, or "" when err is not such a refusal: the object's namespace
// (the NamespaceLifecycle admission's 403, with the NamespaceTerminating
// cause) or its kind's CustomResourceDefinition (apiextensions-apiserver's
// 403, or 405 for a create, "... not allowed while custom resource
// definition is terminating", which carries no cause: its text is the
// only mark). The write can succeed once the deletion ends.
func terminating(err error) string {
	if err == nil {
		return ""
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return "its namespace"
	}
	if (apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err)) &&
		strings.Contains(err.Error(), "while custom resource definition is terminating") {
		return "its kind's CustomResourceDefinition"
	}
	return ""
}

// terminatingEvery is how often a manager asks the apiserver whether a
// namespace or a CRD it refused a write for, as being deleted, is gone:
// the other writes there in between get the same answer without a
// request (see stillTerminating).
const terminatingEvery = time.Second

// terminatingNote is when a write was last refused because of a
// namespace or a CRD being deleted.
type terminatingNote struct {
	at time.Time
}

// terminatingKeys are the keys of what a write of spec waits for when a
// deletion refuses it: its namespace's, and its kind's CRD's.
func terminatingKeys(spec hub.NodeSpec, kind kindInfo) (namespace, crd string) {
	if spec.Namespace != "" {
		namespace = "namespace/" + spec.Namespace
	}
	return namespace, "crd/" + kind.gvk.GroupKind().String()
}

// noteTerminating remembers a write refused because its namespace or CRD
// is being deleted (err; any other error is ignored), so that the writes
// of that namespace or kind that come within terminatingEvery are refused
// the same way without a request: a namespace of a thousand objects being
// deleted costs the apiserver one refused apply a second, not a thousand.
func (m *Manager) noteTerminating(spec hub.NodeSpec, kind kindInfo, err error) {
	what := terminating(err)
	if what == "" {
		return
	}
	ns, crd := terminatingKeys(spec, kind)
	key := crd
	if what == "its namespace" {
		key = ns
	}
	m.nsMu.Lock()
	defer m.nsMu.Unlock()
	if m.terminating == nil {
		m.terminating = make(map[string]terminatingNote)
	}
	m.terminating[key] = terminatingNote{at: m.now()}
}

// stillTerminating returns, when a write to spec's namespace or of its
// kind was refused because of a deletion within terminatingEvery, the
// refusal the apiserver would give this write, a create (its own words,
// naming this object); nil when there was none (the write is sent: the
// first after that time asks the apiserver again for all of them). Only
// creates are refused so: the caller asks for a create only.
func (m *Manager) stillTerminating(spec hub.NodeSpec, kind kindInfo) error {
	ns, crd := terminatingKeys(spec, kind)
	now := m.now()
	fresh := func(key string) bool {
		n, ok := m.terminating[key]
		if !ok || key == "" {
			return false
		}
		if now.Sub(n.at) >= terminatingEvery {
			delete(m.terminating, key)
			return false
		}
		return true
	}
	m.nsMu.Lock()
	nsTerminating, crdTerminating := fresh(ns), fresh(crd)
	m.nsMu.Unlock()
	gr := kind.gvr().GroupResource()
	switch {
	case nsTerminating:
		// As the NamespaceLifecycle admission plugin answers.
		err := apierrors.NewForbidden(gr, spec.Name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", spec.Namespace))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", spec.Namespace), Field: "metadata.namespace"})
		return m.callError("apply", spec, err)
	case crdTerminating:
		// As apiextensions-apiserver answers.
		return m.callError("apply", spec, apierrors.NewForbidden(gr, spec.Name, errors.New("create not allowed while custom resource definition is terminating")))
	}
	return nil
}

// rbacDenial reports whether a 403 is the authorizer's (RBAC, or another
// authorizer, in its words: `User "x" cannot patch resource "deployments"
// in API group "apps" ...`) rather than an admission webhook's denial of
// the request ("admission webhook ... denied the request"), which the
// apiserver answers with the same code.
func rbacDenial(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, " cannot ") && strings.Contains(msg, " resource ")
}

// answered reports whether err is the apiserver's refusal of the
// credentials: a 401, or a 403 on what every identity may read (the
// probe's /readyz). The cluster is reachable, but unusable.
func answered(err error) bool {
	c := classify(err)
	return c == classAuth || c == classForbidden
}

// describeRefused describes a probe the apiserver answered with a refusal
// (see answered).
func describeRefused(cluster string, err error) string {
	if classify(err) == classForbidden {
		return fmt.Sprintf("cluster %q: unauthorized: the apiserver refuses the kubeconfig's credentials even /readyz, which every identity may read by default (403: the whole API is forbidden): %v", cluster, err)
	}
	return describe(cluster, "probe", "/readyz", "", err)
}

// refusedError is the error of a cluster that refused the credentials
// (see answered): it matches hub.ErrUnauthorized and hub.ErrUnreachable.
type refusedError struct {
	msg string
	err error
}

func (e *refusedError) Error() string { return e.msg }

func (e *refusedError) Unwrap() []error {
	return []error{e.err, hub.ErrUnauthorized, hub.ErrUnreachable}
}

// describe turns a client error into a sentence that names the cluster, the
// verb, the resource and the namespace.
func describe(cluster, verb, resource, namespace string, err error) string {
	where := inNamespace(namespace)
	switch classify(err) {
	case classForbidden:
		if !rbacDenial(err) {
			// An admission webhook's denial, or another 403 that
			// is not the authorizer's.
			return fmt.Sprintf("cluster %q: forbidden: cannot %s %s%s: %v", cluster, verb, resource, where, err)
		}
		return fmt.Sprintf("cluster %q: forbidden: cannot %s %s%s (RBAC): %v", cluster, verb, resource, where, err)
	case classAuth:
		return fmt.Sprintf("cluster %q: unauthorized: the apiserver rejected the kubeconfig's credentials while trying to %s %s%s", cluster, verb, resource, where)
	case classTLS:
		return fmt.Sprintf("cluster %q: TLS: %s: %v", cluster, tlsHint(err), err)
	case classNetwork:
		return fmt.Sprintf("cluster %q: cannot reach the apiserver to %s %s%s: %v", cluster, verb, resource, where, err)
	case classTerminating:
		return fmt.Sprintf("cluster %q: cannot %s %s%s yet: %s is being deleted, and the apiserver creates nothing there until it is gone: %v", cluster, verb, resource, where, terminating(err), err)
	case classThrottled:
		return fmt.Sprintf("cluster %q: %s %s%s: the apiserver is shedding load (429 Too Many Requests, retried as its Retry-After asked): %v", cluster, verb, resource, where, err)
	}
	return fmt.Sprintf("cluster %q: %s %s%s: %v", cluster, verb, resource, where, err)
}

// describeRestarting describes a call that failed because its manager was
// not connected or had closed its connection (see Manager.resourceError).
func describeRestarting(cluster, verb, resource, namespace string, err error) string {
	return fmt.Sprintf("cluster %q: %s %s%s: the cluster's watch manager is restarting (%v): run again on the new one",
		cluster, verb, resource, inNamespace(namespace), err)
}

// inNamespace is " in namespace NS" for messages, "" for no namespace.
func inNamespace(namespace string) string {
	if namespace == "" {
		return ""
	}
	return fmt.Sprintf(" in namespace %q", namespace)
}

// tlsHint says why the apiserver's certificate was not accepted and what to
// check: the server address for a certificate issued for other names, the
// certificate authority for one signed by an unknown authority, the dates
// for an expired one.
func tlsHint(err error) string {
	var hostname x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	msg := err.Error()
	switch {
	case errors.As(err, &hostname) && hostname.Certificate != nil:
		return fmt.Sprintf("the apiserver's certificate is valid for %s, not for %q, the host of the kubeconfig's server address: "+
			"use one of the certificate's names in server, or set tls-server-name to one", certNames(hostname.Certificate), hostname.Host)
	case strings.Contains(msg, "certificate is valid for"), strings.Contains(msg, "certificate is not valid for any names"),
		strings.Contains(msg, "doesn't contain any IP SANs"):
		return "the apiserver's certificate is not valid for the host of the kubeconfig's server address: " +
			"use one of the certificate's names in server, or set tls-server-name to one"
	case errors.As(err, &unknown), strings.Contains(msg, "signed by unknown authority"):
		return "the apiserver's certificate is signed by an authority the kubeconfig does not trust: " +
			"check certificate-authority-data (the CA of this cluster)"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired, strings.Contains(msg, "has expired or is not yet valid"):
		return "the apiserver's certificate has expired or is not valid yet: check its dates and this machine's clock"
	}
	return "cannot verify the apiserver's certificate"
}

// certNames lists the names a certificate is valid for (at most 8).
func certNames(c *x509.Certificate) string {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	switch {
	case len(names) == 0:
		return "no name (no subject alternative name)"
	case len(names) > 8:
		return strings.Join(names[:8], ", ") + fmt.Sprintf(" and %d more", len(names)-8)
	}
	return strings.Join(names, ", ")
}
