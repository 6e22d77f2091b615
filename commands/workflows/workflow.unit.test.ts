import { given } from "../testing.js";
import { workflow, type DeployWorkflow, type WorkflowDeployed } from "./workflow.js";

const step = (name: string, cellId = `c_${name}`) => ({ cellId, name, componentId: "sc_1", kind: "action" as const, props: {} });

const deploy = (overrides: Partial<DeployWorkflow["data"]> = {}): DeployWorkflow => ({
  type: "DeployWorkflow",
  data: {
    id: "p_1",
    ownerId: "u_1",
    creatorId: "u_1",
    key: "flow",
    name: "Flow",
    description: null,
    trigger: { type: "http", respond: "workflow" },
    steps: [step("first")],
    errorWorkflow: false,
    active: true,
    deploymentId: "d_1",
    at: 1000,
    newEndpointId: "e1",
    ...overrides,
  },
});

const deployed = (version: number, endpointId: string | null, overrides: Partial<WorkflowDeployed["data"]> = {}): WorkflowDeployed => {
  const { newEndpointId: _unused, ...data } = deploy().data;
  return { type: "WorkflowDeployed", data: { ...data, version, endpointId, ...overrides } };
};

describe("workflow decider", () => {
  it("deploys version 1 with a new endpoint for an HTTP trigger", () => {
    given(workflow)
      .when(deploy())
      .then([deployed(1, "e1")]);
  });

  it("a new deploy of the same key is the next version and keeps the endpoint", () => {
    given(workflow, deployed(1, "e1"))
      .when(deploy({ deploymentId: "d_2", newEndpointId: "e2" }))
      .then([deployed(2, "e1", { deploymentId: "d_2" })]);
  });

  it("an endpoint survives a version without an HTTP trigger", () => {
    given(workflow, deployed(1, "e1"), deployed(2, null, { trigger: { type: "none" } }))
      .when(deploy({ deploymentId: "d_3", newEndpointId: "e3" }))
      .then([deployed(3, "e1", { deploymentId: "d_3" })]);
  });

  it("a timer or no trigger has no endpoint", () => {
    given(workflow)
      .when(deploy({ trigger: { type: "timer", intervalSeconds: 60 } }))
      .then([deployed(1, null, { trigger: { type: "timer", intervalSeconds: 60 } })]);
  });

  it("refuses steps without names, duplicate names, the name trigger, and no steps at all", () => {
    given(workflow)
      .when(deploy({ steps: [] }))
      .thenRejected("invalid_request", /steps/);
    given(workflow)
      .when(deploy({ steps: [step("a"), step("a", "c_2")] }))
      .thenRejected("invalid_request", /another step is named "a"/);
    given(workflow)
      .when(deploy({ steps: [step("trigger")] }))
      .thenRejected("invalid_request", /steps\[0\]\.name/);
    given(workflow)
      .when(deploy({ steps: [step("9lives")] }))
      .thenRejected("invalid_request", /identifier/);
  });

  it("refuses a bad key and a non-positive interval", () => {
    given(workflow)
      .when(deploy({ key: "Bad Key!" }))
      .thenRejected("invalid_request", /key/);
    given(workflow)
      .when(deploy({ trigger: { type: "timer", intervalSeconds: 0 } }))
      .thenRejected("invalid_request", /interval_seconds/);
  });

  it("another key cannot take over a workflow id; a deleted workflow stays deleted", () => {
    given(workflow, deployed(1, "e1"))
      .when(deploy({ key: "other" }))
      .thenRejected("already_exists");
    given(workflow, deployed(1, "e1"), { type: "WorkflowDeleted", data: { id: "p_1", ownerId: "u_1", key: "flow", at: 2 } })
      .when(deploy())
      .thenRejected("already_exists");
  });

  it("deletes a deployed workflow; an unknown one is not found", () => {
    given(workflow, deployed(1, "e1"))
      .when({ type: "DeleteWorkflow", data: { id: "p_1", at: 5 } })
      .then([{ type: "WorkflowDeleted", data: { id: "p_1", ownerId: "u_1", key: "flow", at: 5 } }]);
    given(workflow)
      .when({ type: "DeleteWorkflow", data: { id: "p_1", at: 5 } })
      .thenRejected("not_found");
  });
});
