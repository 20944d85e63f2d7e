/**
 * The model netsched's dashboards (grafana/dashboards/*.json) are type-checked against.
 *
 * It is Grafana's own published model, pinned in package-lock.json at the Grafana that
 * kube-prometheus-stack ships: @grafana/schema for the dashboard, its variables and
 * annotations, and each panel plugin's options and field config; @grafana/prometheus for the
 * Prometheus queries. tests/unit/test_grafana_schema.py writes each dashboard out as an object
 * literal of type NetschedDashboard, so the compiler rejects a field the model does not have
 * (misspelt, or a legacy one Grafana would migrate or drop) and a value of the wrong type.
 *
 * What is added here is only where Grafana saves more than its published types say, each with
 * where Grafana reads it; panel options are partial because Grafana fills in every default.
 */
import type {
  AnnotationQuery,
  AnnotationTarget,
  Dashboard,
  FieldConfig,
  FieldConfigSource,
  Panel,
  RowPanel,
  VariableModel,
  VariableType,
} from '@grafana/schema';
import type { QueryVariableSpec } from '@grafana/schema/apis/dashboard.grafana.app/v2';
import type * as bargauge from '@grafana/schema/dist/esm/raw/composable/bargauge/panelcfg/x/BarGaugePanelCfg_types.gen';
import type * as heatmap from '@grafana/schema/dist/esm/raw/composable/heatmap/panelcfg/x/HeatmapPanelCfg_types.gen';
import type * as stat from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen';
import type * as table from '@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen';
import type * as timeseries from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';
import type { PromQuery, PromVariableQuery } from '@grafana/prometheus';

/**
 * T as JSON spells it: a string enum becomes the union of its values ("table", not
 * LegendDisplayMode.Table). With Optional, every field at every depth is optional (panel
 * options and custom field config, whose defaults Grafana fills in).
 */
type Json<T, Optional extends boolean = false> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? Array<Json<U, Optional>>
      : T extends object
        ? Optional extends true
          ? { [K in keyof T]?: Json<T[K], true> }
          : { [K in keyof T]: Json<T[K]> }
        : T;

/** A panel plugin without custom field config: any key in `custom` is an error. */
type NoCustom = Record<string, never>;

export type PromTarget = Json<PromQuery>;

type FieldConfigOf<C> = Json<Omit<FieldConfigSource, 'defaults'>> & {
  defaults: Json<Omit<FieldConfig, 'custom'>> & { custom?: Json<C, true> };
};

type PanelOf<T extends string, O, C> = Json<Omit<Panel, 'type' | 'options' | 'fieldConfig' | 'targets'>> & {
  type: T;
  options?: Json<O, true>;
  fieldConfig?: FieldConfigOf<C>;
  targets?: PromTarget[];
};

type Row = Json<Omit<RowPanel, 'type' | 'panels'>> & { type: 'row'; panels: NetschedPanel[] };

/** The panel types the dashboards use; another one needs its types added here. */
export type NetschedPanel =
  | PanelOf<'timeseries', timeseries.Options, timeseries.FieldConfig>
  | PanelOf<'bargauge', bargauge.Options, NoCustom>
  | PanelOf<'stat', stat.Options, NoCustom>
  | PanelOf<'table', table.Options, table.FieldConfig>
  | PanelOf<'heatmap', heatmap.Options, heatmap.FieldConfig>
  | Row;

/** Grafana's built-in "Annotations & Alerts" (its own data source). */
type BuiltInAnnotation = Json<Omit<AnnotationQuery, 'target' | 'builtIn'>> & {
  builtIn: 1;
  target?: Json<AnnotationTarget>;
};

/**
 * A Prometheus annotation: its query under `target`. The four fields after it are read from
 * the annotation itself by the Prometheus data source (processEvents in
 * packages/grafana-prometheus/src/annotations.ts), which types them only through @grafana/data's
 * index signature.
 */
type PrometheusAnnotation = Json<Omit<AnnotationQuery<PromQuery>, 'builtIn'>> & {
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
};

export type NetschedAnnotation = BuiltInAnnotation | PrometheusAnnotation;

/**
 * A query variable with a Prometheus query. Grafana saves `definition` (the query as the
 * editor shows it) with it; the published v1 model lacks the field, v2's QueryVariableSpec
 * has it.
 */
type QueryVariable = Json<Omit<VariableModel, 'type' | 'query'>> & {
  type: 'query';
  query?: Json<PromVariableQuery> | string;
  definition?: QueryVariableSpec['definition'];
};

type OtherVariable = Json<Omit<VariableModel, 'type'>> & { type: Exclude<VariableType, 'query'> };

export type NetschedDashboard = Json<Omit<Dashboard, 'panels' | 'annotations' | 'templating'>> & {
  panels: NetschedPanel[];
  annotations: { list: NetschedAnnotation[] };
  templating: { list: Array<QueryVariable | OtherVariable> };
};

// Canaries: were a package's types to stop resolving, the type built on them would accept
// anything and the check would pass whatever the JSON says. Each of these must stay an error.
// @ts-expect-error an unknown field in a Prometheus query
export const unknownQueryField: PromTarget = { refId: 'A', expr: 'up', exprr: 'up' };
// @ts-expect-error an unknown timeseries legend option
export const unknownOption: NetschedPanel = { type: 'timeseries', options: { legend: { placementt: 'right' } } };
export const legacyAnnotation: NetschedAnnotation = {
  name: 'x',
  enable: true,
  iconColor: 'red',
  datasource: { type: 'prometheus', uid: 'p' },
  // @ts-expect-error the legacy annotation form, its query at the top level
  expr: 'up',
};
