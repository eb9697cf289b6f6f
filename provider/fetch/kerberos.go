package fetch

import (
	"errors"
	"net/http"
	"strings"
	"sync"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/crawlspace/crawlspace/config"
)

// krbAuth is Kerberos through SPNEGO: one client per source, logged in on
// its first request (a TGT from the realm's KDC, by password or keytab),
// then a service ticket per host, cached by the client, sent with each
// request as "Authorization: Negotiate ...".
type krbAuth struct {
	cfg *config.Auth
	mu  sync.Mutex
	cl  *krbclient.Client
	// failed holds a failed login until the next cycle: the KDC is asked
	// once, not once a page.
	failed error
}

func (k *krbAuth) client() (*krbclient.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cl != nil {
		return k.cl, nil
	}
	if k.failed != nil {
		return nil, k.failed
	}
	cl, err := k.login()
	if err != nil {
		k.failed = err
		return nil, err
	}
	k.cl = cl
	return cl, nil
}

func (k *krbAuth) login() (*krbclient.Client, error) {
	c := k.cfg
	kc, err := krbconfig.Load(c.Kerberos.Krb5Conf)
	if err != nil {
		return nil, errors.New("reading " + c.Kerberos.Krb5Conf + ": " + err.Error())
	}
	settings := []func(*krbclient.Settings){krbclient.DisablePAFXFAST(c.Kerberos.DisablePAFXFAST)}
	var cl *krbclient.Client
	if c.Keytab != nil {
		kt := keytab.New()
		if err := kt.Unmarshal(c.Keytab); err != nil {
			return nil, errors.New("the keytab does not parse: " + err.Error())
		}
		cl = krbclient.NewWithKeytab(c.Username, c.Kerberos.Realm, kt, kc, settings...)
	} else {
		cl = krbclient.NewWithPassword(c.Username, c.Kerberos.Realm, c.Password, kc, settings...)
	}
	if err := cl.Login(); err != nil {
		return nil, err
	}
	return cl, nil
}

func (k *krbAuth) reset() {
	k.mu.Lock()
	k.failed = nil
	k.mu.Unlock()
}

// setHeader sets req's Negotiate header for the service principal of its
// host (kerberos.spn, else HTTP/<host name>).
func (k *krbAuth) setHeader(req *http.Request) error {
	cl, err := k.client()
	if err != nil {
		return err
	}
	spn := k.cfg.Kerberos.SPN
	if spn == "" {
		spn = "HTTP/" + strings.ToLower(req.URL.Hostname())
	}
	return spnego.SetSPNEGOHeader(cl, req, spn)
}
