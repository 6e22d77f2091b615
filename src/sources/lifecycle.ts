import { customAlphabet } from "nanoid";
import type { EventStore } from "../store/eventStore.js";
import { handleCommand } from "../../commands/handler.js";
import { CommandRejected } from "../../commands/decider.js";
import { source as sourceEvolver, sourceStream } from "../../commands/sources/source.js";
import { deploySource } from "../../commands/sources/deploy.js";
import { updateSource } from "../../commands/sources/update.js";
import { deleteSource } from "../../commands/sources/delete.js";
import { nameStream, uniqueName } from "../../commands/names/name.js";
import { claimName } from "../../commands/names/claim.js";
import { releaseName } from "../../commands/names/release.js";
import { emitterStream, sourceDbStream } from "../../commands/emitters/emitter.js";
import { logsStream, type RunTrigger } from "../../commands/emitters/runLog.js";
import { timerStream } from "../scheduler/timers.js";
import type { SourceRow, SourcesReadModel } from "../readModels/sources.js";
import type { ComponentCache, LoadedComponent } from "../runner/components.js";
import type { Execution, RunnableSource, SourceRunner } from "../runner/sourceRunner.js";
import { loadRuntimeState } from "../runner/runtimeState.js";
import { checkConfiguredProps, type PropRules } from "./configuredProps.js";
import type { Sealer } from "../secrets/sealer.js";
import { slugify } from "../slug.js";
import { newId, type Clock } from "../ids.js";
import { ApiError } from "../api/errors.js";

const endpointToken = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyz", 24);

export interface LifecycleDeps {
  readonly store: EventStore;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly runner: SourceRunner;
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly rules: PropRules;
  readonly endpointUrl: (endpointId: string) => string;
}

export interface Changed {
  readonly sourceId: string;
  readonly position: number | undefined;
}

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);

class HookFailed extends ApiError {
  constructor(hook: string, message: string) {
    super(400, "hook_failed", `the ${hook} hook failed: ${message}`);
  }
}

/** Deploy, update and delete, with the hooks the seed's state table runs around each. */
export class SourceLifecycle {
  constructor(private readonly deps: LifecycleDeps) {}

  async deploy(input: {
    ownerId: string;
    creatorId: string;
    component: LoadedComponent;
    name?: string;
    configuredProps: Record<string, unknown>;
    metadata: Record<string, unknown>;
  }): Promise<Changed> {
    const { component } = input;
    if (component.meta.component.type !== "source") {
      throw new ApiError(400, "invalid_request", "only sources can be deployed; this component is an action");
    }
    const stored = this.#checkProps(component, input.configuredProps);
    const id = newId("dc");
    const endpointId = endpointToken();
    const runnable: RunnableSource = { id, creatorId: input.creatorId, storedProps: stored, endpointUrl: this.deps.endpointUrl(endpointId) };
    // Hooks first, recorded only once every one passed: a failing hook leaves nothing behind.
    const executions = await this.#hooks(runnable, component, ["deploy", "activate"], {}, false);
    // The seed: name "defaults to the component's name slug".
    const name = input.name ?? (slugify(component.meta.component.name) || "source");
    const nameSlug = await this.#claimSlug(input.ownerId, slugify(name) || "source", id, input.metadata);
    const deployed = await handleCommand(this.deps.store, sourceStream(id), sourceEvolver, deploySource, {
      id, ownerId: input.ownerId, creatorId: input.creatorId, componentId: component.id, name, nameSlug, endpointId,
      configuredProps: stored, active: true, at: seconds(this.deps.clock),
    }, { metadata: input.metadata });
    const recorded = await this.#record(runnable, component, executions);
    return { sourceId: id, position: Math.max(deployed.position ?? 0, recorded) };
  }

  async update(input: {
    row: SourceRow;
    component: LoadedComponent;
    name?: string;
    configuredProps?: Record<string, unknown>;
    active: boolean;
    force: boolean;
    metadata: Record<string, unknown>;
  }): Promise<Changed> {
    const { row, component } = input;
    if (component.meta.component.type !== "source") {
      throw new ApiError(400, "invalid_request", "only sources can be deployed; this component is an action");
    }
    const previous = JSON.parse(row.configured_props) as Record<string, unknown>;
    const stored = this.#checkProps(component, input.configuredProps ?? previous, previous);
    const oldComponent = this.deps.components.get(row.component_id)!;
    const oldRunnable = this.#runnable(row, previous);
    const newRunnable: RunnableSource = { ...oldRunnable, storedProps: stored };
    const state = await loadRuntimeState(this.deps.store, row.id);
    const deactivated = row.active === 1 ? await this.#hooks(oldRunnable, oldComponent, ["deactivate"], state.state.db, input.force) : [];
    const db = deactivated.at(-1)?.execution.outcome.db ?? state.state.db;
    const activated = input.active ? await this.#hooks(newRunnable, component, ["activate"], db, input.force) : [];

    let nameSlug = row.name_slug;
    const name = input.name ?? row.name;
    if (input.name !== undefined && slugify(input.name) !== row.name_slug.replace(/-\d+$/, "")) {
      nameSlug = await this.#claimSlug(row.owner_id, slugify(input.name) || "source", row.id, input.metadata);
      await this.#releaseSlug(row.owner_id, row.name_slug, row.id, input.metadata);
    }
    const updated = await handleCommand(this.deps.store, sourceStream(row.id), sourceEvolver, updateSource, {
      id: row.id, componentId: component.id, name, nameSlug, configuredProps: stored, active: input.active, at: seconds(this.deps.clock),
    }, { metadata: input.metadata });
    const first = await this.#record(oldRunnable, oldComponent, deactivated);
    const second = await this.#record(newRunnable, component, activated);
    return { sourceId: row.id, position: Math.max(updated.position ?? 0, first, second) };
  }

  async delete(input: { row: SourceRow; force: boolean; metadata: Record<string, unknown> }): Promise<Changed> {
    const { row } = input;
    const component = this.deps.components.get(row.component_id)!;
    const runnable = this.#runnable(row, JSON.parse(row.configured_props) as Record<string, unknown>);
    if (row.active === 1) {
      const state = await loadRuntimeState(this.deps.store, row.id);
      const executions = await this.#hooks(runnable, component, ["deactivate"], state.state.db, input.force);
      // Its log goes with the source: only a failure the operator forced past is worth keeping, and it is in the answer.
      void executions;
    }
    const deleted = await handleCommand(this.deps.store, sourceStream(row.id), sourceEvolver, deleteSource,
      { id: row.id, at: seconds(this.deps.clock) }, { metadata: input.metadata });
    await this.#releaseSlug(row.owner_id, row.name_slug, row.id, input.metadata);
    // Its events, state and logs go with it.
    for (const stream of [emitterStream(row.id), sourceDbStream(row.id), logsStream(row.id), timerStream(row.id)]) {
      const revision = await this.deps.store.streamRevision(stream);
      if (revision !== undefined) await this.deps.store.truncateBefore(stream, revision + 1);
    }
    return { sourceId: row.id, position: deleted.position };
  }

  #runnable(row: SourceRow, storedProps: Record<string, unknown>): RunnableSource {
    return { id: row.id, creatorId: row.creator_id, storedProps, endpointUrl: this.deps.endpointUrl(row.endpoint_id) };
  }

  #checkProps(component: LoadedComponent, given: Record<string, unknown>, previous?: Record<string, unknown>): Record<string, unknown> {
    const { stored, problems } = checkConfiguredProps(component.meta.component.props, given, this.deps.sealer, this.deps.rules, previous);
    if (problems.length > 0) {
      throw new ApiError(400, "invalid_request", `${problems[0]!.path} ${problems[0]!.message}`, problems);
    }
    return stored;
  }

  /** Runs the hooks the component defines, in order, each seeing the db the previous one left. */
  async #hooks(
    source: RunnableSource,
    component: LoadedComponent,
    hooks: readonly ("deploy" | "activate" | "deactivate")[],
    db: Record<string, unknown>,
    force: boolean,
  ): Promise<{ trigger: RunTrigger; invocationId: string; execution: Execution }[]> {
    const done: { trigger: RunTrigger; invocationId: string; execution: Execution }[] = [];
    for (const hook of hooks) {
      if (!component.meta.component.hooks.includes(hook)) continue;
      const invocationId = newId("inv");
      const execution = await this.deps.runner.execute({ source, component, invocationId, trigger: hook }, db);
      const { outcome } = execution;
      if (!outcome.ok && !force) throw new HookFailed(hook, outcome.error?.message ?? "unknown error");
      done.push({ trigger: hook, invocationId, execution });
      db = outcome.db;
    }
    return done;
  }

  async #record(
    source: RunnableSource,
    component: LoadedComponent,
    executions: readonly { trigger: RunTrigger; invocationId: string; execution: Execution }[],
  ): Promise<number> {
    let position = 0;
    for (const { trigger, invocationId, execution } of executions) {
      const result = await this.deps.runner.record({ source, component, invocationId, trigger }, execution);
      position = Math.max(position, result.position ?? 0);
    }
    return position;
  }

  /** name_slug is unique per owner: my-source, then my-source-1, my-source-2, … */
  async #claimSlug(ownerId: string, base: string, sourceId: string, metadata: Record<string, unknown>): Promise<string> {
    for (let n = 0; n < 1000; n++) {
      const slug = n === 0 ? base : `${base}-${n}`;
      if (this.deps.sources.slugTaken(ownerId, slug)) continue;
      try {
        await handleCommand(this.deps.store, nameStream("source", `${ownerId}/${slug}`), uniqueName, claimName,
          { scope: "source", name: `${ownerId}/${slug}`, holder: sourceId, at: seconds(this.deps.clock) }, { metadata });
        return slug;
      } catch (error) {
        if (error instanceof CommandRejected && error.code === "name_taken") continue;
        throw error;
      }
    }
    throw new ApiError(409, "name_taken", `too many sources named like "${base}"`);
  }

  async #releaseSlug(ownerId: string, slug: string, sourceId: string, metadata: Record<string, unknown>): Promise<void> {
    await handleCommand(this.deps.store, nameStream("source", `${ownerId}/${slug}`), uniqueName, releaseName,
      { scope: "source", name: `${ownerId}/${slug}`, holder: sourceId, at: seconds(this.deps.clock) }, { metadata });
  }
}
