import { expect } from "chai";
import { given } from "../testing.js";
import { hooksAround, source, type HookResults, type SourceDeployed } from "./source.js";

const deployed: SourceDeployed = {
  type: "SourceDeployed",
  data: {
    id: "dc_1",
    ownerId: "u_1",
    creatorId: "u_1",
    componentId: "sc_1",
    name: "My Source",
    nameSlug: "my-source",
    endpointId: "e1",
    configuredProps: { n: 1 },
    active: true,
    at: 10,
  },
};
const deleted = { type: "SourceDeleted" as const, data: { id: "dc_1", ownerId: "u_1", nameSlug: "my-source", at: 12 } };
const passed: HookResults = { failed: [], force: false };
const failedActivate: HookResults = { failed: [{ hook: "activate", message: "boom" }], force: false };
const update = { id: "dc_1", componentId: "sc_2", name: "Renamed", nameSlug: "renamed", configuredProps: {}, active: false, at: 11 };
const deploy = (extra: { componentType?: string; hooks?: HookResults } = {}) => ({
  type: "DeploySource" as const,
  data: { ...deployed.data, componentType: "source", hooks: passed, ...extra },
});
const updateCmd = (extra: { componentType?: string; hooks?: HookResults } = {}) => ({
  type: "UpdateSource" as const,
  data: { ...update, componentType: "source", hooks: passed, ...extra },
});
const deleteCmd = (hooks: HookResults = passed, at = 12) => ({ type: "DeleteSource" as const, data: { id: "dc_1", at, hooks } });

describe("commands/sources", () => {
  it("deploys once", () => {
    given(source).when(deploy()).then([deployed]);
    given(source, deployed).when(deploy()).thenRejected("already_exists");
  });
  it("only sources can be deployed, not actions", () => {
    given(source)
      .when(deploy({ componentType: "action" }))
      .thenRejected("invalid_request", /only sources/);
    given(source, deployed)
      .when(updateCmd({ componentType: "action" }))
      .thenRejected("invalid_request", /only sources/);
  });
  it("a failed hook refuses the deploy; on update and delete unless forced", () => {
    given(source)
      .when(deploy({ hooks: failedActivate }))
      .thenRejected("hook_failed", /the activate hook failed: boom/);
    given(source, deployed)
      .when(updateCmd({ hooks: failedActivate }))
      .thenRejected("hook_failed");
    given(source, deployed)
      .when(updateCmd({ hooks: { ...failedActivate, force: true } }))
      .then([{ type: "SourceUpdated", data: update }]);
    given(source, deployed)
      .when(deleteCmd({ failed: [{ hook: "deactivate", message: "no" }], force: false }))
      .thenRejected("hook_failed");
    given(source, deployed)
      .when(deleteCmd({ failed: [{ hook: "deactivate", message: "no" }], force: true }))
      .then([deleted]);
  });
  it("updates a deployed source, keeping its id", () => {
    given(source, deployed)
      .when(updateCmd())
      .then([{ type: "SourceUpdated", data: update }]);
  });
  it("cannot update an unknown or deleted source", () => {
    given(source).when(updateCmd()).thenRejected("not_found");
    given(source, deployed, deleted).when(updateCmd()).thenRejected("not_found");
  });
  it("deletes once, naming its slug for release", () => {
    given(source, deployed).when(deleteCmd()).then([deleted]);
    given(source, deployed, deleted).when(deleteCmd(passed, 13)).thenRejected("not_found");
  });
  it("runs the seed's hooks: deploy then activate; deactivate and activate around an update; deactivate before a delete", () => {
    expect(hooksAround.deploy(["activate", "deploy", "deactivate"])).to.deep.equal(["deploy", "activate"]);
    expect(hooksAround.deploy([])).to.deep.equal([]);
    expect(hooksAround.update(["activate", "deactivate"], true, true)).to.deep.equal({ before: ["deactivate"], after: ["activate"] });
    expect(hooksAround.update(["activate", "deactivate"], false, true), "a paused source is not deactivated again").to.deep.equal({
      before: [],
      after: ["activate"],
    });
    expect(hooksAround.update(["activate", "deactivate"], true, false), "pausing does not activate").to.deep.equal({
      before: ["deactivate"],
      after: [],
    });
    expect(hooksAround.delete(["deactivate"], true)).to.deep.equal(["deactivate"]);
    expect(hooksAround.delete(["deactivate"], false)).to.deep.equal([]);
  });
});
