// A timer with no run: each tick emits the timer event {timestamp, interval_seconds}.
export default {
  key: "schedule-every-interval",
  name: "Every Interval",
  description: "Emit an event on a fixed interval (15 minutes unless configured).",
  version: "1.0.0",
  props: {
    timer: { type: "$.interface.timer", default: { intervalSeconds: 900 } },
  },
};
