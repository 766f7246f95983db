package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// ReadOnlyMessage is the status message shown when an action is pressed in
// read-only mode.
const ReadOnlyMessage = "read-only mode: actions are disabled"

// ExtraKey is a key binding the caller handles, e.g. the demo's toggle of its
// drift generator. Run is called off the UI's event loop and returns a status
// message to show. Extra keys are checked before the UI's own bindings (so
// they may shadow them) and run even in read-only mode: they are the
// caller's actions, not the hub's.
type ExtraKey struct {
	// Binding is the key and its help text (listed in the help view).
	Binding key.Binding
	// Run performs the action and returns a status message.
	Run func() string
}

// Options configure the UI. The zero value is a colour UI with every action
// enabled and the real clock.
type Options struct {
	// ReadOnly disables every action (repair, pause, warn-only): pressing
	// one shows ReadOnlyMessage, or the Options' own when set.
	ReadOnly bool
	// ReadOnlyMessage, when set, is what pressing an action says in
	// read-only mode instead of the package's ReadOnlyMessage (attach
	// with a viewer's token says whose it is).
	ReadOnlyMessage string
	// NoColor renders without any ANSI styles (honour NO_COLOR).
	NoColor bool
	// Extra are key bindings the caller handles.
	Extra []ExtraKey
	// Now is the clock for ages. Default time.Now.
	Now func() time.Time
	// Reload re-reads the hub's config (the ":reload" command); it returns
	// a status message. Nil: the command says reload is not available.
	// It is an action: disabled in read-only mode.
	Reload func() (string, error)
	// Alerts, when set, returns short texts of problems the snapshot does
	// not show (a failing notification webhook); the status bar shows
	// them at every render, so it must be cheap. Nil: none.
	Alerts func() []string
	// WriteRule adds an ignore rule (YAML as ProposeIgnoreRule returns it)
	// to application app in the config file and reloads; it returns a
	// status message. Nil: the W key says how to enable it (the
	// --write-config flag). It is an action: disabled in read-only mode.
	WriteRule func(app, rule string) (string, error)
	// Status is a status message shown from the start until the next one
	// (the demo says there how to add what it could not start).
	Status string
	// Initial, when set, is shown from the first frame until the source's
	// first snapshot: a caller that already has one (attach fetches one to
	// check the hub answers) shows it at once instead of an empty frame
	// until the stream's first snapshot arrives.
	Initial *hub.Snapshot
	// FirstFrame, when set, is called once, when Run has written to its
	// terminal the first frame showing a snapshot from the source (Initial
	// does not count): its first write of text once that frame is
	// rendered. The hub and the UI in one process start the
	// clusters' watches then, so that a relaunch over thousands of objects
	// shows its first frame before the watches' first lists take the
	// cores.
	FirstFrame func()
	// Logger receives a panic recovered in an action (a reload, a hold,
	// a confirmed action, an extra key's Run), with its stack; the status
	// bar shows it as the action's error either way. Nil: not logged.
	Logger *slog.Logger
	// Notice is where Run says, once the UI has ended, that it waits for
	// actions still running (a reload takes up to its render timeout).
	// Nil: standard error.
	Notice io.Writer
}

// WriteRuleHint is the status message of W when writing rules is not
// enabled.
const WriteRuleHint = "writing the config is off: start driftwatch with --write-config to let W add the rule (or copy it by hand)"

// Screen names what the UI shows.
type Screen int

// Screens.
const (
	// ScreenOverview: every cluster and the live feed.
	ScreenOverview Screen = iota
	// ScreenCluster: every NodeID of one cluster.
	ScreenCluster
	// ScreenDetail: one NodeID.
	ScreenDetail
	// ScreenHelp: the key bindings.
	ScreenHelp
)

// String returns the screen's name.
func (s Screen) String() string {
	switch s {
	case ScreenCluster:
		return "cluster"
	case ScreenDetail:
		return "detail"
	case ScreenHelp:
		return "help"
	}
	return "overview"
}

// Model is the root model of the UI (a tea.Model). It holds the focus, the
// navigation stack (overview, cluster, detail), the help, the command line
// and confirmation prompts, and the status bar. Create it with New.
type Model struct {
	src  Source
	opts Options
	keys keyMap
	st   *styles
	help help.Model
	sub  *subscription

	width, height int
	snap          *hub.Snapshot
	live          bool // a snapshot from the source was applied
	subCh         <-chan *hub.Snapshot
	stack         []Screen
	showHelp      bool

	overview *overviewView
	cluster  *clusterView
	detail   *detailView
	helpView *helpView

	command   bool
	cmdInput  lineInput
	confirm   *pendingAction
	hold      *holdForm
	why       *whyForm
	status    string
	statusErr bool

	// framed is set by the first View of a live snapshot; the terminal's
	// next write of text sets first and calls Options.FirstFrame (see
	// wrote).
	framed, first atomic.Bool

	// actions are the actions running (see action).
	actions actionGroup
}

// actionGroup owns the goroutines of the UI's actions: bubbletea runs each
// command on a goroutine it does not wait for, so Run waits for the
// actions through this before it returns, and its caller can then close
// what they use (the hub's state file under a reload).
type actionGroup struct {
	mu      sync.Mutex
	stopped bool // wait was called: no action starts any more
	running int  // actions started and not done
	wg      sync.WaitGroup
}

// start counts an action about to run; false once wait was called (the
// action must not run: Run has returned, or is about to).
func (g *actionGroup) start() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.wg.Add(1)
	g.running++
	return true
}

// done counts an action that ended.
func (g *actionGroup) done() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.wg.Done()
}

// wait lets no action start any more and waits for the running ones.
// notice, when they are not done within actionNoticeAfter, is called
// once with how many were running (a quit must not look hung).
func (g *actionGroup) wait(notice func(running int)) {
	g.mu.Lock()
	g.stopped = true
	running := g.running
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { // owned here: wait returns only after it closed done
		defer close(done)
		g.wg.Wait()
	}()
	if running > 0 {
		t := time.NewTimer(actionNoticeAfter)
		select {
		case <-done:
		case <-t.C:
			notice(running)
		}
		t.Stop()
	}
	<-done
}

// actionNoticeAfter is how long Run waits for the actions still running
// once the UI ended before it says so.
const actionNoticeAfter = 500 * time.Millisecond

// DefaultHoldTTL is the duration a hold prompt offers.
const DefaultHoldTTL = 30 * time.Minute

// holdForm asks for a hold's duration, then its reason (required); enter
// on the reason places the hold, esc cancels.
type holdForm struct {
	target hub.HoldTarget
	ttl    time.Duration
	reason bool // asking for the reason (the duration is set)
	input  lineInput
}

// whyForm asks why a switch is set (optional: a pause, a warn-only
// override): enter sets it with that reason, esc cancels.
type whyForm struct {
	what    string // the action, for its log if it panics: "the pause of prod-eu"
	started string // shown once enter is pressed
	done    string // shown once set
	set     func(note hub.SwitchNote) error
	input   lineInput
}

// pendingAction is an action waiting for y/n.
type pendingAction struct {
	question string
	started  string // optimistic status message shown once confirmed
	run      func() (string, error)
}

// subscription owns the hub subscription. Its cancel is set from the
// subscribing command's goroutine, hence the lock.
type subscription struct {
	mu     sync.Mutex
	cancel func()
	closed bool
	done   chan struct{}
}

// Messages.
type (
	subscribedMsg struct{ ch <-chan *hub.Snapshot }
	snapshotMsg   struct {
		snap *hub.Snapshot
		// fromSub is set when the subscription delivered it (re-arm).
		fromSub bool
	}
	subscriptionClosedMsg struct{}
	tickMsg               time.Time
	actionDoneMsg         struct {
		text string
		err  error
	}
	extraDoneMsg struct{ text string }
	// specMsg is a desired object read for the node view (see fetchSpec).
	specMsg struct {
		key  specKey
		spec *hub.NodeSpec
		err  error
	}
)

// specTimeout bounds the read of a node view's desired object.
const specTimeout = 10 * time.Second

// fetchSpec reads the desired object of the NodeID the node view shows
// from a source whose snapshots do not carry it (a NodeReader: a remote
// hub), once per NodeID and revision; nil when there is nothing to read.
func (m *Model) fetchSpec() tea.Cmd {
	r, ok := m.src.(NodeReader)
	if !ok || !m.onStack(ScreenDetail) {
		return nil
	}
	k, ok := m.detail.needsSpec()
	if !ok {
		return nil
	}
	return m.action("reading the desired object", func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), specTimeout)
		defer cancel()
		n, err := r.Node(ctx, k.id)
		return specMsg{key: k, spec: n.Spec, err: err}
	})
}

// action returns the command that runs an action off the event loop as
// one of the model's actions (see actionGroup): Run waits for it, and a
// panic in it is recovered, logged to Options.Logger and shown as the
// action's error (what names the action there).
func (m *Model) action(what string, run func() tea.Msg) tea.Cmd {
	g, log := &m.actions, m.opts.Logger
	return func() tea.Msg {
		if !g.start() {
			return nil
		}
		defer g.done()
		var msg tea.Msg
		if err := rescue.Call(log, what, func() { msg = run() }); err != nil {
			return actionDoneMsg{err: err}
		}
		return msg
	}
}

// New returns the root model over src. It subscribes to src when the
// program starts it (Init); call Close to unsubscribe when driving the
// model without Run.
func New(src Source, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st := newStyles(opts.NoColor)
	m := &Model{
		src:   src,
		opts:  opts,
		keys:  defaultKeys(),
		st:    st,
		help:  help.New(),
		sub:   &subscription{done: make(chan struct{})},
		stack: []Screen{ScreenOverview},
	}
	m.help.Styles = st.help
	m.overview = newOverview(st, &m.keys, opts.Now)
	m.cluster = newClusterView(st, &m.keys, opts.Now)
	m.detail = newDetailView(st, &m.keys, opts.Now)
	m.helpView = newHelpView(st, &m.keys, opts.Extra)
	m.setSize(80, 24)
	if opts.Status != "" {
		m.setStatus(opts.Status, false)
	}
	if opts.Initial != nil {
		m.applySnapshot(opts.Initial)
	}
	return m
}

// Run runs the UI over src in the alternate screen until the user quits or
// ctx is done (then it returns nil), or the terminal hangs up: SIGHUP, the
// end of its input or a failed write end the UI with an error wrapping
// ErrHangup. progOpts are appended to the program's options (tests pass
// input, output and a colour profile; their own input and output are not
// watched for a hangup). It returns once no action it started (a reload,
// a hold, a confirmed action, an extra key's Run) is still running, so the
// caller may then close what the actions use.
func Run(ctx context.Context, src Source, opts Options, progOpts ...tea.ProgramOption) error {
	ctx, hangup := context.WithCancelCause(ctx)
	defer hangup(nil)
	stopSignals := notifyHangup(ctx, hangup)
	defer stopSignals()
	m := New(src, opts)
	defer m.Close()
	po, release := terminalOptions(hangup, m.wrote)
	defer release()
	// The program is killed only through kill: when ctx ends with the
	// terminal still there (SIGTERM, the hub stopping), it quits as q
	// does, which waits for its input reader before closing it and
	// restores the terminal; a kill does neither (and races its reader).
	killCtx, kill := context.WithCancel(context.Background())
	defer kill()
	po = append(po, tea.WithContext(killCtx))
	if opts.NoColor {
		po = append(po, tea.WithColorProfile(colorprofile.Ascii))
	}
	// Frames go out at bubbletea's highest rate: a frame rendered reaches
	// the terminal within 8 ms instead of 17 (the renderer writes on a
	// ticker, and only what changed), at no idle cost that can be
	// measured.
	po = append(po, tea.WithFPS(maxFPS))
	po = append(po, progOpts...)
	p := tea.NewProgram(m, po...)
	ended := make(chan struct{})
	var wg conc.WaitGroup
	wg.Go(func() { stopOnDone(ctx, ended, p.Quit, kill) })
	_, err := p.Run()
	close(ended)
	wg.Wait()
	m.actions.wait(func(running int) {
		w := opts.Notice
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "waiting for %d action(s) in progress (a reload, a hold...) to end\n", running)
	})
	if cause := context.Cause(ctx); errors.Is(cause, ErrHangup) {
		return cause // a hangup seen here or by the caller's NotifyHangup
	}
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}

// maxFPS is the highest frame rate bubbletea's renderer runs at.
const maxFPS = 120

// quitGrace is how long a program asked to quit because its context ended
// gets before it is killed.
const quitGrace = time.Second

// stopOnDone ends a program whose context ended before it did (ended):
// after a hangup it is killed at once (the terminal is gone, nothing to
// restore); otherwise it is asked to quit, and killed if it has not ended
// after quitGrace.
func stopOnDone(ctx context.Context, ended <-chan struct{}, quit, kill func()) {
	select {
	case <-ended:
		return
	case <-ctx.Done():
	}
	if errors.Is(context.Cause(ctx), ErrHangup) {
		kill()
		return
	}
	quit()
	t := time.NewTimer(quitGrace)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
		kill()
	}
}

// Close ends the hub subscription and releases the command waiting for the
// next snapshot. It is safe to call more than once.
func (m *Model) Close() {
	s := m.sub
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	if s.cancel != nil {
		s.cancel()
	}
}

// Screen returns what the UI shows now.
func (m *Model) Screen() Screen {
	if m.showHelp {
		return ScreenHelp
	}
	return m.top()
}

// Snapshot returns the latest snapshot the UI received (nil before the
// first).
func (m *Model) Snapshot() *hub.Snapshot { return m.snap }

// StatusMessage returns the message shown in the status bar.
func (m *Model) StatusMessage() string { return m.status }

func (m *Model) top() Screen { return m.stack[len(m.stack)-1] }

func (m *Model) onStack(s Screen) bool {
	for _, x := range m.stack {
		if x == s {
			return true
		}
	}
	return false
}

// Init subscribes to the source and starts the clock that refreshes ages.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.subscribe, tick())
}

func (m *Model) subscribe() tea.Msg {
	ch, cancel := m.src.Subscribe()
	s := m.sub
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel()
		return nil
	}
	s.cancel = cancel
	return subscribedMsg{ch}
}

// waitForSnapshot waits for the next snapshot; Update re-arms it after each.
func waitForSnapshot(ch <-chan *hub.Snapshot, done <-chan struct{}) tea.Cmd {
	return func() tea.Msg {
		select {
		case s, ok := <-ch:
			if !ok {
				return subscriptionClosedMsg{}
			}
			return snapshotMsg{snap: s, fromSub: true}
		case <-done:
			return nil
		}
	}
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles messages.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setSize(msg.Width, msg.Height)
	case subscribedMsg:
		m.subCh = msg.ch
		return m, waitForSnapshot(msg.ch, m.sub.done)
	case snapshotMsg:
		if msg.snap != nil {
			m.applySnapshot(msg.snap)
			m.live = true
		}
		if msg.fromSub && m.subCh != nil {
			return m, tea.Batch(waitForSnapshot(m.subCh, m.sub.done), m.fetchSpec())
		}
		return m, m.fetchSpec()
	case subscriptionClosedMsg:
		m.subCh = nil
		m.setStatus("the hub ended the subscription: data is no longer live", true)
	case tickMsg:
		return m, tick()
	case actionDoneMsg:
		if msg.err != nil {
			m.setStatus("error: "+msg.err.Error(), true)
		} else {
			m.setStatus(msg.text, false)
		}
	case extraDoneMsg:
		m.setStatus(msg.text, false)
	case tea.PasteMsg:
		switch {
		case m.hold != nil:
			m.hold.input.insert(oneLine(msg.Content))
		case m.why != nil:
			m.why.input.insert(oneLine(msg.Content))
		case m.command:
			m.cmdInput.insert(oneLine(msg.Content))
		case m.top() == ScreenCluster && m.cluster.filtering:
			return m, m.cluster.Update(msg)
		}
	case specMsg:
		m.detail.gotSpec(msg)
	case tea.KeyPressMsg:
		return m, tea.Batch(m.handleKey(msg), m.fetchSpec())
	}
	return m, nil
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statusErr = clean(s), isErr
}

func (m *Model) setSize(w, h int) {
	m.width, m.height = w, h
	body := max(h-3, 0)
	m.overview.SetSize(w, body)
	m.cluster.SetSize(w, body)
	m.detail.SetSize(w, body)
	m.helpView.SetSize(w, body)
	m.help.SetWidth(w)
}

func (m *Model) applySnapshot(s *hub.Snapshot) {
	m.snap = s
	m.overview.setSnapshot(s)
	if m.onStack(ScreenCluster) {
		m.cluster.setSnapshot(s)
	}
	if m.onStack(ScreenDetail) {
		m.detail.setSnapshot(s)
	}
}

func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.confirm != nil {
		a := m.confirm
		m.confirm = nil
		if key.Matches(k, m.keys.Yes) {
			m.setStatus(a.started, false)
			return m.action("the action "+strconv.Quote(a.question), func() tea.Msg {
				text, err := a.run()
				return actionDoneMsg{text, err}
			})
		}
		m.setStatus("cancelled", false)
		return nil
	}
	if m.hold != nil {
		return m.updateHold(k)
	}
	if m.why != nil {
		return m.updateWhy(k)
	}
	if m.command {
		switch m.cmdInput.update(k) {
		case inputDone:
			m.command = false
			return m.runCommand(m.cmdInput.String())
		case inputCancel:
			m.command = false
		}
		return nil
	}
	if !m.showHelp && m.top() == ScreenCluster && m.cluster.filtering {
		return m.cluster.Update(k)
	}
	if m.showHelp {
		if key.Matches(k, m.keys.Back, m.keys.Quit, m.keys.Help) {
			m.showHelp = false
			return nil
		}
		if key.Matches(k, m.keys.Command) {
			m.showHelp = false
			m.command = true
			m.cmdInput.reset(":", "")
			return nil
		}
		return m.helpView.Update(k)
	}
	for _, e := range m.opts.Extra {
		if key.Matches(k, e.Binding) && e.Run != nil {
			run := e.Run
			return m.action("the action of key "+e.Binding.Help().Key, func() tea.Msg { return extraDoneMsg{run()} })
		}
	}
	switch {
	case key.Matches(k, m.keys.Help):
		m.showHelp = true
		m.helpView.off = 0
		return nil
	case key.Matches(k, m.keys.Command):
		m.command = true
		m.cmdInput.reset(":", "")
		return nil
	case key.Matches(k, m.keys.Quit):
		if len(m.stack) == 1 {
			return tea.Quit
		}
		m.back()
		return nil
	case key.Matches(k, m.keys.Back):
		switch {
		case m.top() == ScreenCluster && m.cluster.clearFilter():
		case m.top() == ScreenOverview && m.overview.focusFeed:
			m.overview.focusFeed = false
		default:
			m.back()
		}
		return nil
	}
	// Keys that open a view or ask for a confirmation, on every screen
	// (the rule writer on the node view only).
	for _, a := range []struct {
		b  key.Binding
		do func()
	}{
		{m.keys.Enter, m.enter}, {m.keys.Repair, m.askRepair}, {m.keys.Pause, m.askPause}, {m.keys.Warn, m.askWarn},
		{m.keys.Hold, m.askHold}, {m.keys.Release, m.askRelease},
	} {
		if key.Matches(k, a.b) {
			a.do()
			return nil
		}
	}
	if m.top() == ScreenDetail && key.Matches(k, m.keys.WriteRule) {
		m.askWriteRule()
		return nil
	}
	switch m.top() {
	case ScreenCluster:
		return m.cluster.Update(k)
	case ScreenDetail:
		return m.detail.Update(k)
	}
	return m.overview.Update(k)
}

func (m *Model) back() {
	if len(m.stack) > 1 {
		m.stack = m.stack[:len(m.stack)-1]
	}
	if m.top() == ScreenCluster && m.snap != nil {
		m.cluster.setSnapshot(m.snap)
	}
}

func (m *Model) enter() {
	switch m.top() {
	case ScreenOverview:
		if e, ok := m.overview.SelectedFeed(); ok {
			m.openNode(e.ID)
		} else if c, ok := m.overview.SelectedCluster(); ok {
			m.openCluster(c)
		}
	case ScreenCluster:
		if n, ok := m.cluster.Selected(); ok {
			m.openNode(n.ID)
		}
	}
}

func (m *Model) openCluster(id string) {
	m.overview.selectCluster(id)
	m.cluster.open(id, m.snap)
	m.stack = []Screen{ScreenOverview, ScreenCluster}
}

func (m *Model) openNode(id hub.NodeID) {
	m.overview.selectCluster(id.Cluster)
	m.cluster.open(id.Cluster, m.snap)
	m.cluster.selectNode(id)
	m.detail.open(id, m.snap)
	m.stack = []Screen{ScreenOverview, ScreenCluster, ScreenDetail}
}

// runCommand runs a ":" command line.
func (m *Model) runCommand(line string) tea.Cmd {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	arg := ""
	if len(f) > 1 {
		arg = f[1]
	}
	switch f[0] {
	case "q", "q!", "quit", "qa":
		return tea.Quit
	case "help", "h", "?":
		m.showHelp = true
		m.helpView.off = 0
	case "overview", "o", "home":
		m.stack = []Screen{ScreenOverview}
	case "reload":
		switch {
		case m.opts.ReadOnly:
			m.setStatus(m.readOnlyText(), true)
		case m.opts.Reload == nil:
			m.setStatus("reload is not available here", true)
		default:
			m.setStatus("reloading the config...", false)
			reload := m.opts.Reload
			return m.action("the reload", func() tea.Msg {
				text, err := reload()
				return actionDoneMsg{text, err}
			})
		}
	case "cluster", "cl", "c":
		switch {
		case arg == "":
			m.setStatus("usage: :cluster <id>", true)
		case m.snap == nil:
			m.setStatus("no snapshot yet", true)
		default:
			if _, ok := m.snap.Cluster(arg); !ok {
				m.setStatus(fmt.Sprintf("no cluster %q", arg), true)
				return nil
			}
			m.openCluster(arg)
		}
	case "node", "no", "n":
		if arg == "" {
			m.setStatus("usage: :node <cluster:namespace/name:kind>", true)
			return nil
		}
		id, err := hub.ParseNodeID(arg)
		switch {
		case err != nil:
			m.setStatus(err.Error(), true)
		case m.snap == nil:
			m.setStatus("no snapshot yet", true)
		default:
			if _, ok := m.snap.Node(id); !ok {
				m.setStatus(fmt.Sprintf("no node %s", id), true)
				return nil
			}
			m.openNode(id)
		}
	default:
		m.setStatus(fmt.Sprintf("unknown command %q: try :cluster <id>, :node <nodeid>, :reload, :q", f[0]), true)
	}
	return nil
}

// targetNode is the NodeID an action applies to on the current screen.
func (m *Model) targetNode() (hub.NodeID, bool) {
	switch m.top() {
	case ScreenDetail:
		return m.detail.id, true
	case ScreenCluster:
		if n, ok := m.cluster.Selected(); ok {
			return n.ID, true
		}
	case ScreenOverview:
		if e, ok := m.overview.SelectedFeed(); ok {
			return e.ID, true
		}
	}
	return hub.NodeID{}, false
}

// targetCluster is the cluster a pause applies to on the current screen.
func (m *Model) targetCluster() (string, bool) {
	switch m.top() {
	case ScreenDetail:
		return m.detail.id.Cluster, true
	case ScreenCluster:
		return m.cluster.cluster, m.cluster.cluster != ""
	}
	return m.overview.SelectedCluster()
}

func (m *Model) askRepair() {
	if m.opts.ReadOnly {
		m.setStatus(m.readOnlyText(), true)
		return
	}
	id, ok := m.targetNode()
	if !ok {
		m.setStatus("select a node first: enter a cluster, or tab to the feed", true)
		return
	}
	src := m.src
	m.confirm = &pendingAction{
		question: "Repair " + id.String() + " now?",
		started:  "repair of " + id.String() + " requested…",
		run: func() (string, error) {
			if err := src.RepairNow(id); err != nil {
				return "", err
			}
			return "repair queued: " + id.String(), nil
		},
	}
}

func (m *Model) askPause() {
	if m.opts.ReadOnly {
		m.setStatus(m.readOnlyText(), true)
		return
	}
	cluster, ok := m.targetCluster()
	if !ok {
		m.setStatus("select a cluster first", true)
		return
	}
	paused := false
	if m.snap != nil {
		c, _ := m.snap.Cluster(cluster)
		paused = c.Paused
	}
	src := m.src
	if paused {
		m.confirm = &pendingAction{
			question: "Resume repairs on cluster " + cluster + "?",
			started:  "resuming repairs on " + cluster + "…",
			run: func() (string, error) {
				if err := src.PauseCluster(cluster, false); err != nil {
					return "", err
				}
				return "repairs resumed on " + cluster, nil
			},
		}
		return
	}
	m.askWhy("Pause repairs on cluster "+cluster+" (drift is still reported). Why?", &whyForm{
		what: "the pause of " + cluster, started: "pausing repairs on " + cluster + "…",
		done: "repairs paused on " + cluster + "; p again resumes them",
		set:  func(note hub.SwitchNote) error { return src.PauseClusterNote(cluster, note) },
	})
}

// askWhy opens the prompt of a switch that takes a reason (optional).
func (m *Model) askWhy(question string, f *whyForm) {
	m.why = f
	f.input.reset(question+" (enter sets it, esc cancels): ", "")
}

// promptDone feeds a key to a prompt's input and reports whether enter
// ended it; esc closes the prompt (close) and says it was cancelled.
func (m *Model) promptDone(in *lineInput, k tea.KeyPressMsg, close func()) bool {
	switch in.update(k) {
	case inputCancel:
		close()
		m.setStatus("cancelled", false)
	case inputDone:
		return true
	}
	return false
}

// updateWhy feeds a key to the reason prompt: enter sets the switch with
// the reason typed (none is allowed), esc cancels.
func (m *Model) updateWhy(k tea.KeyPressMsg) tea.Cmd {
	f := m.why
	if !m.promptDone(&f.input, k, func() { m.why = nil }) {
		return nil
	}
	m.why = nil
	note := hub.SwitchNote{Reason: strings.TrimSpace(f.input.String())}
	if err := note.Valid(); err != nil {
		m.setStatus(err.Error(), true)
		return nil
	}
	m.setStatus(f.started, false)
	return m.action(f.what, func() tea.Msg {
		if err := f.set(note); err != nil {
			return actionDoneMsg{err: err}
		}
		return actionDoneMsg{text: f.done}
	})
}

func (m *Model) askWarn() {
	if m.opts.ReadOnly {
		m.setStatus(m.readOnlyText(), true)
		return
	}
	id, ok := m.targetNode()
	if !ok {
		m.setStatus("select a node first: enter a cluster, or tab to the feed", true)
		return
	}
	var app string
	if m.snap != nil {
		n, _ := m.snap.Node(id)
		app = n.Application
	}
	if app == "" {
		m.setStatus("no application known for "+id.String(), true)
		return
	}
	src := m.src
	if m.snap.AppPolicies[app] == hub.PolicyWarn {
		m.confirm = &pendingAction{
			question: "Clear the warn-only override of application " + app + "?",
			started:  "clearing warn-only on " + app + "…",
			run: func() (string, error) {
				if err := src.SetApplicationPolicy(app, ""); err != nil {
					return "", err
				}
				return "application " + app + " back to its configured policy", nil
			},
		}
		return
	}
	m.askWhy("Set application "+app+" to warn-only (no repairs). Why?", &whyForm{
		what: "warn-only on " + app, started: "setting " + app + " to warn-only…",
		done: "application " + app + " is warn-only",
		set:  func(note hub.SwitchNote) error { return src.SetApplicationPolicyNote(app, hub.PolicyWarn, note) },
	})
}

// holdTarget is what h holds on the current screen: the node in the
// detail, the cluster view or the overview's feed; else the overview's
// cluster.
func (m *Model) holdTarget() (hub.HoldTarget, bool) {
	if id, ok := m.targetNode(); ok {
		return hub.HoldTarget{Scope: hub.HoldNode, Name: id.String()}, true
	}
	if m.top() == ScreenOverview {
		if c, ok := m.overview.SelectedCluster(); ok {
			return hub.HoldTarget{Scope: hub.HoldCluster, Name: c}, true
		}
	}
	return hub.HoldTarget{}, false
}

// holdLabel names a hold target for prompts: "node x", "cluster y".
func holdLabel(t hub.HoldTarget) string { return string(t.Scope) + " " + t.Name }

// askHold opens the hold prompt: the duration (DefaultHoldTTL offered),
// then the reason.
func (m *Model) askHold() {
	if m.opts.ReadOnly {
		m.setStatus(m.readOnlyText(), true)
		return
	}
	t, ok := m.holdTarget()
	if !ok {
		m.setStatus("select a node or a cluster first", true)
		return
	}
	m.hold = &holdForm{target: t}
	m.hold.input.reset("Hold repairs of "+holdLabel(t)+" for: ", shortDuration(DefaultHoldTTL))
}

// updateHold feeds a key to the hold prompt.
func (m *Model) updateHold(k tea.KeyPressMsg) tea.Cmd {
	f := m.hold
	if !m.promptDone(&f.input, k, func() { m.hold = nil }) {
		return nil
	}
	text := strings.TrimSpace(f.input.String())
	if !f.reason {
		ttl, err := time.ParseDuration(text)
		if err != nil || ttl <= 0 {
			m.setStatus(fmt.Sprintf("hold duration %q: want a positive duration such as 30m, 2h or 1h30m", text), true)
			return nil
		}
		f.ttl, f.reason = ttl, true
		f.input.reset("Reason for holding "+holdLabel(f.target)+" ("+shortDuration(ttl)+"): ", "")
		m.setStatus("", false)
		return nil
	}
	if text == "" {
		m.setStatus("a reason is required: say why repairs must wait (esc cancels)", true)
		return nil
	}
	m.hold = nil
	src, t, ttl, loc := m.src, f.target, f.ttl, m.opts.Now().Location()
	m.setStatus("holding "+holdLabel(t)+"…", false)
	return m.action("the hold of "+holdLabel(t), func() tea.Msg {
		hd, err := src.Hold(t, ttl, text)
		if err != nil {
			return actionDoneMsg{err: err}
		}
		return actionDoneMsg{text: "repairs of " + holdLabel(t) + " held for " + shortDuration(ttl) +
			" (until " + hd.Until.In(loc).Format("15:04") + "); H releases it"}
	})
}

// activeHolds counts the holds of the snapshot still active now.
func (m *Model) activeHolds() int {
	if m.snap == nil {
		return 0
	}
	n := 0
	now := m.opts.Now()
	for _, hd := range m.snap.Holds {
		if hd.Active(now) {
			n++
		}
	}
	return n
}

// holdOn returns the active hold that H releases for the selection: the
// hold on the node itself, else on its application, else on its cluster;
// on the overview's cluster table, the cluster's.
func (m *Model) holdOn() (hub.Hold, bool) {
	if m.snap == nil {
		return hub.Hold{}, false
	}
	var targets []hub.HoldTarget
	if id, ok := m.targetNode(); ok {
		targets = append(targets, hub.HoldTarget{Scope: hub.HoldNode, Name: id.String()})
		if n, ok := m.snap.Node(id); ok && n.Application != "" {
			targets = append(targets, hub.HoldTarget{Scope: hub.HoldApplication, Name: n.Application})
		}
		targets = append(targets, hub.HoldTarget{Scope: hub.HoldCluster, Name: id.Cluster})
	} else if t, ok := m.holdTarget(); ok {
		targets = append(targets, t)
	}
	now := m.opts.Now()
	for _, t := range targets {
		for _, hd := range m.snap.Holds {
			if hd.Target == t && hd.Active(now) {
				return hd, true
			}
		}
	}
	return hub.Hold{}, false
}

// askRelease asks to release the hold on the selection.
func (m *Model) askRelease() {
	if m.opts.ReadOnly {
		m.setStatus(m.readOnlyText(), true)
		return
	}
	t, ok := m.holdTarget()
	if !ok {
		m.setStatus("select a node or a cluster first", true)
		return
	}
	hd, ok := m.holdOn()
	if !ok {
		m.setStatus("no active hold on "+holdLabel(t), true)
		return
	}
	src, target := m.src, hd.Target
	left := shortDuration(max(hd.Until.Sub(m.opts.Now()).Round(time.Minute), time.Minute))
	m.confirm = &pendingAction{
		question: "Release the hold on " + holdLabel(target) + " (" + hd.Reason + ", " + left + " left)?",
		started:  "releasing the hold on " + holdLabel(target) + "…",
		run: func() (string, error) {
			if err := src.ReleaseHold(target); err != nil {
				return "", err
			}
			return "hold on " + holdLabel(target) + " released: repairs resume", nil
		},
	}
}

// View renders the UI in the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	if m.live && m.opts.FirstFrame != nil {
		m.framed.Store(true)
	}
	return v
}

// wrote is called after each write to the terminal, with what it wrote:
// the first write of text (not only escape sequences, such as the
// terminal queries the program sends as it starts) once a live frame was
// rendered is that frame's, or a later one's, and calls
// Options.FirstFrame.
func (m *Model) wrote(p []byte) {
	if m.first.Load() || !m.framed.Load() || ansi.Strip(string(p)) == "" {
		return
	}
	if m.first.CompareAndSwap(false, true) {
		m.opts.FirstFrame()
	}
}

// render renders exactly height lines of at most width cells.
func (m *Model) render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	body := max(h-3, 0)
	lines := make([]string, 0, h)
	lines = append(lines, m.headerLine())

	var content string
	switch m.Screen() {
	case ScreenHelp:
		content = m.helpView.View()
	case ScreenCluster:
		content = m.cluster.View()
	case ScreenDetail:
		content = m.detail.View()
	default:
		content = m.overview.View()
	}
	n := 0
	if body > 0 && content != "" {
		for _, l := range strings.Split(content, "\n") {
			if n == body {
				break
			}
			lines = append(lines, truncate(l, w))
			n++
		}
	}
	for ; n < body; n++ {
		lines = append(lines, "")
	}
	lines = append(lines, m.promptLine(), m.statusLine())
	if len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	return strings.Join(lines, "\n")
}

// headerLine shows where we are and, on the right, the global drift totals.
func (m *Model) headerLine() string {
	crumbs := []string{"driftwatch"}
	switch {
	case m.showHelp:
		crumbs = append(crumbs, "help")
	default:
		if m.onStack(ScreenCluster) {
			crumbs = append(crumbs, m.cluster.cluster)
		}
		if m.onStack(ScreenDetail) {
			crumbs = append(crumbs, m.detail.id.Resource+":"+string(m.detail.id.Kind))
		}
	}
	left := m.st.crumb.render(clean(strings.Join(crumbs, " > ")))
	return spread(left, m.totals(), m.width)
}

// totals summarises every cluster's problems for the header.
func (m *Model) totals() string {
	if m.snap == nil {
		return ""
	}
	var objects, drift, fixing, failed, stuck, unknown int
	for _, c := range m.snap.Clusters {
		_, d, fx, fl, s := counts(c)
		objects += c.Objects
		drift += d
		fixing += fx
		failed += fl
		stuck += s
		unknown += c.Counts[hub.StatusUnknown]
	}
	if drift+fixing+failed+stuck+unknown == 0 {
		if objects == 1 {
			return m.st.green.render("1 object in sync")
		}
		return m.st.green.render("all " + plural(objects, "object") + " in sync")
	}
	parts := []string{plural(objects, "object")}
	add := func(n int, what string, st style) {
		if n > 0 {
			parts = append(parts, st.render(strconv.Itoa(n)+" "+what))
		}
	}
	add(drift, "drifted", m.st.yellow)
	add(fixing, "repairing", m.st.cyan)
	add(failed, "failed", m.st.errText)
	add(stuck, "stuck", m.st.errText)
	add(unknown, "unknown", m.st.grey)
	return strings.Join(parts, m.st.dim.render(" · "))
}

// promptLine is the confirm question, the command line, the filter input,
// or the key hints of the screen.
func (m *Model) promptLine() string {
	switch {
	case m.confirm != nil:
		return truncate(m.st.prompt.render(clean(m.confirm.question)+" [y/N]"), m.width)
	case m.hold != nil:
		return m.hold.input.view(m.st, m.width)
	case m.why != nil:
		return m.why.input.view(m.st, m.width)
	case m.command:
		return m.cmdInput.view(m.st, m.width)
	case !m.showHelp && m.top() == ScreenCluster && m.cluster.filtering:
		return m.cluster.input.view(m.st, m.width)
	}
	return truncate(m.help.ShortHelpView(m.shortHelp()), m.width)
}

// readOnlyText is what pressing an action says in read-only mode.
func (m *Model) readOnlyText() string {
	if m.opts.ReadOnlyMessage != "" {
		return m.opts.ReadOnlyMessage
	}
	return ReadOnlyMessage
}

// shortHelp is the key hints line of the current screen: help first, then
// the screen's keys with short descriptions (the help view has the long
// ones). Actions are left out in read-only mode.
func (m *Model) shortHelp() []key.Binding {
	k := m.keys
	short := func(b key.Binding, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
	}
	actions := func(b ...key.Binding) []key.Binding {
		if m.opts.ReadOnly {
			return nil
		}
		return b
	}
	repair, pause, warn := short(k.Repair, "repair"), short(k.Pause, "pause"), short(k.Warn, "warn-only")
	hold := short(k.Hold, "hold")
	back := short(k.Back, "back")
	scroll := key.NewBinding(key.WithKeys("up"), key.WithHelp("↑/↓", "scroll"))
	b := []key.Binding{short(k.Help, "help")}
	switch m.Screen() {
	case ScreenHelp:
		return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc/?", "close help")), scroll}
	case ScreenCluster:
		b = append(b, k.Enter, k.Filter, short(k.Sort, "sort"), short(k.Problems, "problems"))
		b = append(b, actions(repair, pause, warn, hold)...)
		return append(b, back, short(k.Command, "cmd"))
	case ScreenDetail:
		b = append(b, actions(repair, warn, pause, hold)...)
		return append(b, scroll, back, short(k.Command, "cmd"))
	}
	b = append(b, k.Enter, short(k.Tab, "feed/clusters"))
	b = append(b, actions(pause, hold)...)
	for _, e := range m.opts.Extra {
		b = append(b, e.Binding)
	}
	return append(b, short(k.Command, "cmd"), key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")))
}

// replicasSummary says how many replicas the hub runs as and the health
// of each ("2 replicas: a up, b down"; * marks the one attached to), or ""
// for a hub of one process.
func (m *Model) replicasSummary() string {
	if m.snap == nil || len(m.snap.Replicas) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.snap.Replicas))
	for _, r := range m.snap.Replicas {
		name := r.ID
		if r.Self {
			name += "*"
		}
		health := "up"
		if !r.Reachable {
			health = "down"
		}
		parts = append(parts, name+" "+health)
	}
	return plural(len(m.snap.Replicas), "replica") + ": " + strings.Join(parts, ", ")
}

// failingSources names the manifest sources that fail ("source web
// failing 5m (last good kept)"), or "" when none does.
func (m *Model) failingSources() string {
	if m.snap == nil || len(m.snap.Sources) == 0 {
		return ""
	}
	ids := make([]string, 0, len(m.snap.Sources))
	oldest := m.snap.Sources[0].Since
	for _, f := range m.snap.Sources {
		ids = append(ids, f.ID)
		if f.Since.Before(oldest) {
			oldest = f.Since
		}
	}
	word := "source "
	if len(ids) > 1 {
		word = "sources "
	}
	return word + strings.Join(ids, ", ") + " failing " + age(m.opts.Now(), oldest) + " (last good kept)"
}

// gitRevisions names the revision in force of each Git source
// ("web@abc1234", "web@abc1234 stale 5m"), or "" when there are none.
func (m *Model) gitRevisions() string {
	if m.snap == nil || len(m.snap.Revisions) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.snap.Revisions))
	for _, r := range m.snap.Revisions {
		p := r.ID + "@" + hub.ShortCommit(r.Commit)
		if r.Commit == "" {
			p = r.ID + "@-"
		}
		if r.Error != "" {
			p += " stale " + age(m.opts.Now(), r.Since)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// revisionLine shows a node's revision ("<sha> <subject>") with a short
// SHA, cleaned.
func revisionLine(rev string) string {
	sha, subject, _ := strings.Cut(rev, " ")
	if subject == "" {
		return clean(hub.ShortCommit(sha))
	}
	return clean(hub.ShortCommit(sha) + " " + subject)
}

// statusLine is the status bar: hub, clusters up, repair mode, holds, the
// replicas of a hub that runs as several, the last message and the
// snapshot's age.
func (m *Model) statusLine() string {
	hubID, up, total, mode, snapAge := "-", 0, 0, "-", "no snapshot yet"
	if s := m.snap; s != nil {
		hubID = s.HubID
		total = len(s.Clusters)
		for _, c := range s.Clusters {
			if c.State == hub.ClusterSynced || c.State == hub.ClusterDegraded {
				up++
			}
		}
		if s.Policy != "" {
			mode = string(s.Policy)
		}
		snapAge = "snapshot " + age(m.opts.Now(), s.Taken) + " ago"
	}
	mode = "mode " + mode
	if m.opts.ReadOnly {
		mode += " READONLY"
	}
	left := " " + hubID + " │ " + strconv.Itoa(up) + "/" + plural(total, "cluster") + " up │ " + mode
	if n := m.activeHolds(); n > 0 {
		left += " │ " + plural(n, "hold")
	}
	if r := m.replicasSummary(); r != "" {
		left += " │ " + r
	}
	if g := m.gitRevisions(); g != "" {
		left += " │ " + g
	}
	if f := m.failingSources(); f != "" {
		left += " │ ! " + f
	}
	if m.opts.Alerts != nil {
		if a := m.opts.Alerts(); len(a) > 0 {
			left += " │ ! " + strings.Join(a, ", ")
		}
	}
	if m.status != "" {
		msg := m.status
		if m.statusErr {
			msg = "! " + msg
		}
		left += " │ " + msg
	}
	line := spread(clean(left), snapAge+" ", m.width)
	if m.st.statusBar.on {
		if n := m.width - width(line); n > 0 {
			line += strings.Repeat(" ", n)
		}
		return m.st.statusBar.render(line)
	}
	return line
}
