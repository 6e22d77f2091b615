// Deploy, update and delete a source, with the hooks the seed's state table runs around each. The
// rules are the source decider's (commands/sources); this runs the hooks first (their results go
// into the command), saves code that came with the request only once every check and hook passed,
// claims and releases the name_slug, and records the hooks' runs once the command was accepted, so a
// refused command leaves nothing behind (no component either).
import type { EventStore } from "../store/eventStore.js";
import { CommandHandler, latestPosition, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import {
  hooksAround,
  source as sourceDecider,
  type AdditionalProps,
  type Hook,
  type HookResults,
  type SourceCommand,
} from "../../commands/sources/source.js";
import { Names } from "../../commands/names/claims.js";
import { sourceDataStreams, streams } from "../../commands/streams.js";
import { DomainError } from "../../commands/decider.js";
import type { EmitterStore } from "../../commands/emitters/emitterStore.js";
import type { Source, SourcesReadModel } from "../readModels/sources.js";
import type { LoadedComponent } from "../components/componentCache.js";
import type { Execution, RunnableSource, SourceRunner } from "../runner/sourceRunner.js";
import { checkConfiguredProps, type PropRules } from "./configuredProps.js";
import type { Sealer } from "../secrets/sealer.js";
import type { ConnectedAccounts } from "../connectedAccounts/connectedAccounts.js";
import { slugify } from "../slug.js";
import { endpointToken, newId, type Clock } from "../ids.js";
import type { QuotaGuard } from "./quota.js";
import { OwnerSlots } from "../runner/ownerSlots.js";
import { additionalPropsOf, httpInterface, ownValues, withAdditionalProps } from "../components/additionalProps.js";
import type { InvocationOutcome, NormalizedProp } from "../runtime/types.js";

export interface LifecycleDeps {
  readonly store: EventStore;
  readonly emitters: EmitterStore;
  readonly sources: SourcesReadModel;
  readonly runner: SourceRunner;
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly rules: PropRules;
  readonly endpointUrl: (endpointId: string) => string;
  /** Checks the connected accounts configured props bind (the owner's, of the prop's app). */
  readonly accounts: Pick<ConnectedAccounts, "checkBindings">;
  /** Refuses hooks of a free account past its daily quota (they are runs like any other). */
  readonly quota?: Pick<QuotaGuard, "check">;
  /**
   * Deploys, updates and deletes of one billed user whose hooks run at once on this node (the
   * runners' HEADWATER_RUNS_PER_OWNER); the rest wait their turn, other users' do not.
   */
  readonly hooksPerOwner?: number;
}

export interface Changed {
  readonly sourceId: string;
  readonly position: number | undefined;
}

interface HookRun {
  readonly hook: Hook;
  readonly invocationId: string;
  readonly execution: Execution;
}

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);

/**
 * A source whose hooks are running on this node. A request to its endpoint then runs at once,
 * beside the hook, rather than queued behind it: webhook providers call the endpoint while the
 * hook creates the webhook (Asana's X-Hook-Secret, Microsoft Graph's validationToken) and answer
 * the hook only once it has answered them. The run sees the db as the hooks before it left it;
 * what it emits and writes is not kept (the source is being deployed, changed or deleted).
 */
export interface HookWindow {
  readonly sourceId: string;
  readonly customResponse: boolean;
  run(invocationId: string, event: unknown): Promise<InvocationOutcome>;
}

export class SourceLifecycle {
  readonly #sources: HandlerOf<typeof sourceDecider>;
  readonly #names: Names;
  readonly #hookSlots: OwnerSlots;
  readonly #windows = new Map<string, HookWindow>();

  constructor(private readonly deps: LifecycleDeps) {
    this.#hookSlots = new OwnerSlots(deps.hooksPerOwner ?? 4);
    this.#sources = new CommandHandler(deps.store, sourceDecider, streams.source);
    this.#names = new Names(deps.store);
  }

  async deploy(input: {
    ownerId: string;
    creatorId: string;
    component: LoadedComponent;
    name?: string;
    configuredProps: Record<string, unknown>;
    metadata: Record<string, unknown>;
    /**
     * Saves the component when its code came with the request: called once every check and hook
     * passed, just before the source's event, so a refused deploy saves nothing (the hooks ran with
     * the component as it will be saved).
     */
    saveComponent?: (options: HandleOptions) => Promise<{ position: number | undefined }>;
  }): Promise<Changed> {
    const { component } = input;
    const options = { metadata: input.metadata };
    const id = newId("dc");
    const endpointId = endpointToken();
    // The seed: name "defaults to the component's name slug".
    const name = input.name ?? (slugify(component.meta.component.name) || "source");
    let additionalProps: AdditionalProps = [];
    const command = (nameSlug: string, hooks: HookResults, configuredProps: Record<string, unknown>): SourceCommand => ({
      type: "DeploySource",
      data: {
        id,
        ownerId: input.ownerId,
        creatorId: input.creatorId,
        componentId: component.id,
        name,
        nameSlug,
        endpointId,
        configuredProps,
        ...(additionalProps.length > 0 ? { additionalProps } : {}),
        active: true,
        at: seconds(this.deps.clock),
        componentType: component.meta.component.type,
        hooks,
      },
    });
    // The decider's rules come first (an action is refused before its props are judged), then the props, before any user code runs.
    sourceDecider.decide(command("-", { failed: [], force: false }, {}), sourceDecider.initialState());
    const checked = await this.#checkProps(
      { id, creatorId: input.creatorId, endpointUrl: this.deps.endpointUrl(endpointId) },
      input.ownerId,
      component,
      input.configuredProps,
    );
    const stored = checked.stored;
    additionalProps = checked.additionalProps;
    const runnable: RunnableSource = {
      id,
      creatorId: input.creatorId,
      storedProps: stored,
      endpointUrl: this.deps.endpointUrl(endpointId),
      additionalProps,
    };
    const ran = await this.#hooks(runnable, component, hooksAround.deploy(component.meta.component.hooks), {}, endpointId);
    await this.#loggedIfRefused([{ source: runnable, component, ran }], async () =>
      sourceDecider.decide(command("-", results(ran, false), stored), sourceDecider.initialState()),
    );
    const saved = await input.saveComponent?.(options);
    const { name: nameSlug, appended: claim } = await this.#claimSlug(input.ownerId, name, id, options);
    let deployed;
    try {
      deployed = await this.#sources.handle(id, command(nameSlug, results(ran, false), stored), options);
    } catch (error) {
      await this.#releaseSlug(input.ownerId, nameSlug, id, options);
      throw error;
    }
    const recorded = await this.#record(runnable, component, ran);
    return { sourceId: id, position: latestPosition(saved?.position, claim.position, deployed.position, recorded) };
  }

  async update(input: {
    source: Source;
    component: LoadedComponent;
    previousComponent: LoadedComponent;
    name?: string;
    configuredProps?: Record<string, unknown>;
    active: boolean;
    force: boolean;
    metadata: Record<string, unknown>;
    /**
     * Saves the component when its code came with the request: called once every check and hook
     * passed, just before the source's event, so a refused update saves nothing (the hooks ran with
     * the component as it will be saved).
     */
    saveComponent?: (options: HandleOptions) => Promise<{ position: number | undefined }>;
  }): Promise<Changed> {
    const { source, component, previousComponent } = input;
    const options = { metadata: input.metadata };
    const previous = source.configuredProps;
    const name = input.name ?? source.name;
    const renamed = input.name !== undefined && slugify(input.name) !== source.nameSlug.replace(/-\d+$/, "");
    let stored: Record<string, unknown> = previous;
    let additionalProps: AdditionalProps = source.additionalProps;
    const command = (nameSlug: string, hooks: HookResults): SourceCommand => ({
      type: "UpdateSource",
      data: {
        id: source.id,
        componentId: component.id,
        name,
        nameSlug,
        configuredProps: stored,
        ...(additionalProps.length > 0 ? { additionalProps } : {}),
        active: input.active,
        at: seconds(this.deps.clock),
        componentType: component.meta.component.type,
        hooks,
      },
    });
    const current = await this.#sources.load(source.id);
    sourceDecider.decide(command(source.nameSlug, { failed: [], force: false }), current.state);
    const oldRunnable = this.#runnable(source, previous);
    // Pausing, resuming or renaming keeps the props additionalProps() added: it runs again only for new values or new code.
    const same = input.configuredProps === undefined && component.id === source.componentId ? source.additionalProps : undefined;
    // additionalProps() sees the source's `this.db` as it is, as its hooks and runs do.
    const { state } = await this.deps.emitters.load(source.id);
    const checked = await this.#checkProps(oldRunnable, source.ownerId, component, input.configuredProps ?? previous, {
      previous,
      kept: same,
      db: state.db,
    });
    stored = checked.stored;
    additionalProps = checked.additionalProps;
    const newRunnable: RunnableSource = { ...oldRunnable, storedProps: stored, additionalProps };

    const around = hooksAround.update(component.meta.component.hooks, source.active, input.active);
    const before = hooksAround.update(previousComponent.meta.component.hooks, source.active, input.active).before;
    const deactivated = await this.#hooks(oldRunnable, previousComponent, before, state.db, source.endpointId);
    // A failed deactivate refuses the update (unless forced) before the new code's activate runs.
    await this.#loggedIfRefused([{ source: oldRunnable, component: previousComponent, ran: deactivated }], async () =>
      sourceDecider.decide(command(source.nameSlug, results(deactivated, input.force)), current.state),
    );
    const db = deactivated.at(-1)?.execution.outcome.db ?? state.db;
    const activated = await this.#hooks(newRunnable, component, around.after, db, source.endpointId);
    const hooks = results([...deactivated, ...activated], input.force);
    await this.#loggedIfRefused(
      [
        { source: oldRunnable, component: previousComponent, ran: deactivated },
        { source: newRunnable, component, ran: activated },
      ],
      async () => sourceDecider.decide(command(source.nameSlug, hooks), current.state),
    );
    const saved = await input.saveComponent?.(options);

    let nameSlug = source.nameSlug;
    let claimPosition: number | undefined;
    if (renamed) {
      const claimed = await this.#claimSlug(source.ownerId, name, source.id, options);
      nameSlug = claimed.name;
      claimPosition = claimed.appended.position;
    }
    const updated = await this.#sources.handle(source.id, command(nameSlug, hooks), options);
    if (renamed) await this.#releaseSlug(source.ownerId, source.nameSlug, source.id, options);
    const first = await this.#record(oldRunnable, previousComponent, deactivated);
    const second = await this.#record(newRunnable, component, activated);
    return { sourceId: source.id, position: latestPosition(saved?.position, claimPosition, updated.position, first, second) };
  }

  async delete(input: { source: Source; component: LoadedComponent; force: boolean; metadata: Record<string, unknown> }): Promise<Changed> {
    const { source, component } = input;
    const options = { metadata: input.metadata };
    const runnable = this.#runnable(source, source.configuredProps);
    const { state } = await this.deps.emitters.load(source.id);
    // Its log goes with the source: a failure the operator forced past is in the answer, not kept.
    const ran = await this.#hooks(
      runnable,
      component,
      hooksAround.delete(component.meta.component.hooks, source.active),
      state.db,
      source.endpointId,
    );
    const deleted = await this.#loggedIfRefused([{ source: runnable, component, ran }], () =>
      this.#sources.handle(
        source.id,
        {
          type: "DeleteSource",
          data: { id: source.id, at: seconds(this.deps.clock), hooks: results(ran, input.force) },
        },
        options,
      ),
    );
    await this.#releaseSlug(source.ownerId, source.nameSlug, source.id, options);
    // Its events, state, logs and timer go with it; its command stream stays for audit.
    for (const stream of sourceDataStreams(source.id)) {
      const revision = await this.deps.store.streamRevision(stream);
      if (revision !== undefined) await this.deps.store.truncateBefore(stream, revision + 1);
    }
    return { sourceId: source.id, position: deleted.position };
  }

  #runnable(source: Source, storedProps: Record<string, unknown>): RunnableSource {
    return {
      id: source.id,
      creatorId: source.creatorId,
      storedProps,
      endpointUrl: this.deps.endpointUrl(source.endpointId),
      additionalProps: source.additionalProps,
    };
  }

  /**
   * The configured props checked against the source's props, and the props its additionalProps()
   * adds for them: that method runs first (before any hook) on the own props' values, checked, so
   * what it adds (an HTTP interface, a timer, more inputs) is checked, stored and shown like the rest.
   */
  async #checkProps(
    source: Pick<RunnableSource, "id" | "creatorId" | "endpointUrl">,
    ownerId: string,
    component: LoadedComponent,
    given: Record<string, unknown>,
    options: {
      /** The stored props an update starts from. */
      previous?: Record<string, unknown>;
      /** The props additionalProps() added before, kept as they are (no call). */
      kept?: AdditionalProps;
      /** The source's `this.db` (an update's; a new source's is empty). */
      db?: Record<string, unknown>;
    } = {},
  ): Promise<{ stored: Record<string, unknown>; additionalProps: AdditionalProps }> {
    const { previous, kept } = options;
    let { props } = component.meta.component;
    let additionalProps: AdditionalProps = kept ?? [];
    if (kept) props = withAdditionalProps(props, kept);
    else if (component.meta.component.additionalProps) {
      const own = this.#checked(props, ownValues(component, given), previous);
      await this.deps.accounts.checkBindings(ownerId, props, own);
      await this.#hookSlots.acquire(source.creatorId);
      let outcome;
      try {
        outcome = await this.deps.runner.describeAdditionalProps({ ...source, storedProps: own }, component, options.db ?? {});
      } finally {
        this.#hookSlots.release(source.creatorId);
      }
      additionalProps = additionalPropsOf(outcome, component, "configured_props");
      props = withAdditionalProps(props, additionalProps);
    }
    const stored = this.#checked(props, given, previous);
    await this.deps.accounts.checkBindings(ownerId, props, stored);
    return { stored, additionalProps };
  }

  #checked(props: readonly NormalizedProp[], given: Record<string, unknown>, previous?: Record<string, unknown>): Record<string, unknown> {
    const { stored, problems } = checkConfiguredProps(props, given, this.deps.sealer, this.deps.rules, previous);
    if (problems.length > 0) throw new DomainError("invalid_request", `${problems[0].path} ${problems[0].message}`, problems);
    return stored;
  }

  /**
   * The source whose hooks run on this node now, by its endpoint: a request to that endpoint runs
   * beside them (`HookWindow`), where queued it would wait for the hook, which may wait for it.
   */
  hookWindow(endpointId: string): HookWindow | undefined {
    return this.#windows.get(endpointId);
  }

  /** Runs the given hooks in order, each seeing the db the previous one left; stops at the first failure. */
  async #hooks(
    source: RunnableSource,
    component: LoadedComponent,
    hooks: readonly Hook[],
    db: Record<string, unknown>,
    endpointId: string,
  ): Promise<HookRun[]> {
    const done: HookRun[] = [];
    if (hooks.length === 0) return done;
    this.deps.quota?.check(source.creatorId);
    // One user's many deploys at once (hooks looping to the run timeout, say) take at most a few
    // of the sandbox's places, as their runs do on a runner: other users' deploys and runs go on.
    await this.#hookSlots.acquire(source.creatorId);
    const window: HookWindow = {
      sourceId: source.id,
      customResponse: httpInterface(component.meta.component.props, source.additionalProps)?.customResponse === true,
      run: async (invocationId, event) => {
        this.deps.quota?.check(source.creatorId);
        const trigger = "http" as const;
        return (await this.deps.runner.execute({ source, component, invocationId, trigger, event }, db, { place: "beside-hooks" })).outcome;
      },
    };
    this.#windows.set(endpointId, window);
    try {
      for (const hook of hooks) {
        const invocationId = newId("inv");
        const execution = await this.deps.runner.execute({ source, component, invocationId, trigger: hook }, db);
        done.push({ hook, invocationId, execution });
        if (!execution.outcome.ok) break;
        db = execution.outcome.db;
      }
    } finally {
      if (this.#windows.get(endpointId) === window) this.#windows.delete(endpointId);
      this.#hookSlots.release(source.creatorId);
    }
    return done;
  }

  /**
   * Decides, and when the change is refused (a hook failed and the caller did not force past it),
   * logs the hooks that ran before the refusal is answered: their compute was spent, so they are
   * billed and counted like any run, and the source's logs (when it exists) say what failed. Before,
   * a refused deploy's hooks cost nothing, so a hook looping to the run timeout was free to repeat.
   */
  async #loggedIfRefused<T>(
    ran: readonly { source: RunnableSource; component: LoadedComponent; ran: readonly HookRun[] }[],
    decide: () => Promise<T>,
  ): Promise<T> {
    try {
      return await decide();
    } catch (error) {
      for (const group of ran) {
        for (const { hook, invocationId, execution } of group.ran) {
          await this.deps.runner.logRefused({ source: group.source, component: group.component, invocationId, trigger: hook }, execution);
        }
      }
      throw error;
    }
  }

  async #record(source: RunnableSource, component: LoadedComponent, ran: readonly HookRun[]): Promise<number | undefined> {
    let position: number | undefined;
    for (const { hook, invocationId, execution } of ran) {
      const result = await this.deps.runner.record({ source, component, invocationId, trigger: hook }, execution);
      position = latestPosition(position, result.position);
    }
    return position;
  }

  /** name_slug is unique per owner: my-source, then my-source-1, my-source-2, … */
  async #claimSlug(ownerId: string, name: string, sourceId: string, options: HandleOptions) {
    const base = slugify(name) || "source";
    return this.#names
      .claimFirstFree(
        { scope: "source", base: `${ownerId}/${base}`, holder: sourceId, at: seconds(this.deps.clock) },
        (candidate) => this.deps.sources.slugTaken(ownerId, candidate.slice(ownerId.length + 1)),
        options,
      )
      .then(({ name: claimed, appended }) => ({ name: claimed.slice(ownerId.length + 1), appended }));
  }

  async #releaseSlug(ownerId: string, slug: string, sourceId: string, options: HandleOptions): Promise<void> {
    await this.#names.release({ scope: "source", name: `${ownerId}/${slug}`, holder: sourceId, at: seconds(this.deps.clock) }, options);
  }
}

/** What the hooks that ran tell the decider: the failures, and whether the caller forces past them. */
function results(ran: readonly HookRun[], force: boolean): HookResults {
  return {
    failed: ran
      .filter((r) => !r.execution.outcome.ok)
      .map((r) => ({ hook: r.hook, message: r.execution.outcome.error?.message ?? "unknown error" })),
    force,
  };
}
