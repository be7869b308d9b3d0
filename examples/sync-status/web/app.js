// Member status page: one panel per member named in the address (?members=alice,bob or
// ?member=alice). Each panel holds a WebSocket to /ws?member=<id> on this host and shows the last
// status the relay delivered. Test hooks on each panel: data-member, data-state
// (syncing | synced | failed), data-count (statuses received), data-connection
// (connecting | open | reconnecting) and data-handled-by (the replica that handled the event
// shown, when the status names it).
'use strict';

(function () {
  const MEMBER_ID = /^[A-Za-z0-9_:@-]{1,64}$/;
  const RETRY_MIN_MS = 500;
  const RETRY_MAX_MS = 15000;

  function membersFromQuery(search) {
    const params = new URLSearchParams(search);
    const names = [];
    for (const value of params.getAll('members')) names.push(...value.split(','));
    names.push(...params.getAll('member'));
    const valid = [];
    const invalid = [];
    for (const raw of names) {
      const name = raw.trim();
      if (!name) continue;
      if (!MEMBER_ID.test(name)) invalid.push(name);
      else if (!valid.includes(name)) valid.push(name);
    }
    return { valid, invalid };
  }

  function formatTime(iso) {
    const at = iso ? new Date(iso) : new Date();
    const when = Number.isNaN(at.getTime()) ? new Date() : at;
    const sameDay = when.toDateString() === new Date().toDateString();
    return {
      iso: when.toISOString(),
      text: sameDay ? when.toLocaleTimeString() : when.toLocaleString(),
    };
  }

  class MemberPanel {
    constructor(member, template) {
      this.member = member;
      this.count = 0;
      this.shownEvent = 0;
      this.attempt = 0;
      this.socket = null;
      this.root = template.content.firstElementChild.cloneNode(true);
      this.root.dataset.member = member;
      this.root.querySelector('.member').textContent = member;
      this.label = this.root.querySelector('.label');
      this.detail = this.root.querySelector('.detail');
      this.handledBy = this.root.querySelector('.handled-by');
      this.replica = this.root.querySelector('.replica');
      this.countText = this.root.querySelector('.panel-foot');
      this.connectionText = this.root.querySelector('.connection-text');
    }

    connect() {
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const url = `${scheme}//${location.host}/ws?member=${encodeURIComponent(this.member)}`;
      const socket = new WebSocket(url);
      this.socket = socket;
      socket.addEventListener('open', () => {
        this.attempt = 0;
        this.setConnection('open', 'live');
      });
      socket.addEventListener('message', (event) => this.onMessage(event.data));
      socket.addEventListener('close', () => {
        if (this.socket !== socket) return;
        this.socket = null;
        this.scheduleReconnect();
      });
    }

    scheduleReconnect() {
      const ceiling = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.attempt);
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);  // jitter: not every tab at once
      this.attempt += 1;
      this.setConnection('reconnecting', 'reconnecting…');
      setTimeout(() => this.connect(), delay);
    }

    setConnection(state, text) {
      this.root.dataset.connection = state;
      this.connectionText.textContent = text;
    }

    onMessage(data) {
      let status;
      try {
        status = JSON.parse(data);
      } catch {
        return;
      }
      if (status === null || typeof status !== 'object' || status.type === 'ping') return;
      if (status.member !== undefined && status.member !== this.member) return;
      // On every (re)attach the relay hands over the member's last status: the same text again
      // is not a new status.
      if (data === this.lastData) return;
      this.lastData = data;
      this.count += 1;
      this.root.dataset.count = String(this.count);
      this.countText.textContent =
        `${this.count} ${this.count === 1 ? 'status' : 'statuses'} received`;
      // Replicas handle a member's events concurrently, and an event a dead replica held comes
      // back only after ack_wait: statuses can arrive out of order. The one of the newest event
      // (its stream sequence) stays on show.
      if (Number.isFinite(status.event)) {
        if (status.event < this.shownEvent) return;
        this.shownEvent = status.event;
      }
      this.show(status);
    }

    show(status) {
      if (status.state === 'synced') {
        const at = formatTime(status.at);
        this.setState('synced', 'Synced');
        this.detail.replaceChildren('Synced at ');
        const time = document.createElement('time');
        time.dateTime = at.iso;
        time.textContent = at.text;
        this.detail.append(time);
        if (Number.isFinite(status.messages)) {
          const n = status.messages;
          this.detail.append(` · ${n} ${n === 1 ? 'message' : 'messages'}`);
        }
      } else if (status.state === 'failed') {
        this.setState('failed', 'Failed');
        this.detail.textContent =
          typeof status.error === 'string' && status.error ? status.error : 'The sync failed.';
      } else if (status.state === 'syncing') {
        this.setState('syncing', 'Syncing…');
        this.detail.textContent = 'A sync is running.';
      } else {
        return;
      }
      this.showHandledBy(status.handled_by);
    }

    showHandledBy(replica) {
      if (typeof replica === 'string' && replica) {
        this.root.dataset.handledBy = replica;
        this.replica.textContent = replica;
        this.handledBy.hidden = false;
      } else {
        delete this.root.dataset.handledBy;
        this.handledBy.hidden = true;
      }
    }

    setState(state, label) {
      this.root.dataset.state = state;
      this.label.textContent = label;
    }
  }

  const { valid, invalid } = membersFromQuery(location.search);
  if (invalid.length) {
    const note = document.getElementById('invalid');
    note.textContent = `Not a member id (1 to 64 of A-Z a-z 0-9 _ . : @ -): ${invalid.join(', ')}`;
    note.hidden = false;
  }
  if (!valid.length) {
    document.getElementById('hint').hidden = false;
    return;
  }
  const template = document.getElementById('panel-template');
  const container = document.getElementById('panels');
  for (const member of valid) {
    const panel = new MemberPanel(member, template);
    container.append(panel.root);
    panel.connect();
  }
})();
