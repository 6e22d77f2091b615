// A timer with no run, on a cron schedule (UTC): each tick emits the timer event.
export default {
  key: "schedule-cron",
  name: "Cron Schedule",
  description: "Emit an event on a cron schedule, evaluated in UTC (hourly unless configured).",
  version: "1.0.0",
  props: {
    timer: { type: "$.interface.timer", default: { cron: "0 * * * *" } },
  },
};
