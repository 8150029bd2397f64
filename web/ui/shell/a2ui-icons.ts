// Icons for the A2UI page's Icon component, as inline SVG: Google's
// Material Symbols (outlined, weight 400; Apache License 2.0), the symbols
// the catalog's names come from, bundled from @material-symbols/svg-400
// (only these files). First the standard catalog's 48 names (its off and
// filled pairs map to the outlined and filled symbol; payment and phone,
// which Material Symbols names otherwise, to credit_card and mobile); then
// some common symbols agents bind by their Material name (the A2UI
// gallery's "pause", "trending_up", ...). Other names show as their text.

import i_accountCircle from "@material-symbols/svg-400/outlined/account_circle.svg";
import i_add from "@material-symbols/svg-400/outlined/add.svg";
import i_arrowBack from "@material-symbols/svg-400/outlined/arrow_back.svg";
import i_arrowForward from "@material-symbols/svg-400/outlined/arrow_forward.svg";
import i_attachFile from "@material-symbols/svg-400/outlined/attach_file.svg";
import i_calendarToday from "@material-symbols/svg-400/outlined/calendar_today.svg";
import i_call from "@material-symbols/svg-400/outlined/call.svg";
import i_camera from "@material-symbols/svg-400/outlined/camera.svg";
import i_check from "@material-symbols/svg-400/outlined/check.svg";
import i_close from "@material-symbols/svg-400/outlined/close.svg";
import i_delete from "@material-symbols/svg-400/outlined/delete.svg";
import i_download from "@material-symbols/svg-400/outlined/download.svg";
import i_edit from "@material-symbols/svg-400/outlined/edit.svg";
import i_event from "@material-symbols/svg-400/outlined/event.svg";
import i_error from "@material-symbols/svg-400/outlined/error.svg";
import i_favorite from "@material-symbols/svg-400/outlined/favorite-fill.svg";
import i_favoriteOff from "@material-symbols/svg-400/outlined/favorite.svg";
import i_folder from "@material-symbols/svg-400/outlined/folder.svg";
import i_help from "@material-symbols/svg-400/outlined/help.svg";
import i_home from "@material-symbols/svg-400/outlined/home.svg";
import i_info from "@material-symbols/svg-400/outlined/info.svg";
import i_locationOn from "@material-symbols/svg-400/outlined/location_on.svg";
import i_lock from "@material-symbols/svg-400/outlined/lock.svg";
import i_lockOpen from "@material-symbols/svg-400/outlined/lock_open.svg";
import i_mail from "@material-symbols/svg-400/outlined/mail.svg";
import i_menu from "@material-symbols/svg-400/outlined/menu.svg";
import i_moreVert from "@material-symbols/svg-400/outlined/more_vert.svg";
import i_moreHoriz from "@material-symbols/svg-400/outlined/more_horiz.svg";
import i_notificationsOff from "@material-symbols/svg-400/outlined/notifications_off.svg";
import i_notifications from "@material-symbols/svg-400/outlined/notifications.svg";
import i_payment from "@material-symbols/svg-400/outlined/credit_card.svg";
import i_person from "@material-symbols/svg-400/outlined/person.svg";
import i_phone from "@material-symbols/svg-400/outlined/mobile.svg";
import i_photo from "@material-symbols/svg-400/outlined/photo.svg";
import i_print from "@material-symbols/svg-400/outlined/print.svg";
import i_refresh from "@material-symbols/svg-400/outlined/refresh.svg";
import i_search from "@material-symbols/svg-400/outlined/search.svg";
import i_send from "@material-symbols/svg-400/outlined/send.svg";
import i_settings from "@material-symbols/svg-400/outlined/settings.svg";
import i_share from "@material-symbols/svg-400/outlined/share.svg";
import i_shoppingCart from "@material-symbols/svg-400/outlined/shopping_cart.svg";
import i_star from "@material-symbols/svg-400/outlined/star-fill.svg";
import i_starHalf from "@material-symbols/svg-400/outlined/star_half.svg";
import i_starOff from "@material-symbols/svg-400/outlined/star.svg";
import i_upload from "@material-symbols/svg-400/outlined/upload.svg";
import i_visibility from "@material-symbols/svg-400/outlined/visibility.svg";
import i_visibilityOff from "@material-symbols/svg-400/outlined/visibility_off.svg";
import i_warning from "@material-symbols/svg-400/outlined/warning.svg";
import x_pause from "@material-symbols/svg-400/outlined/pause.svg";
import x_play_arrow from "@material-symbols/svg-400/outlined/play_arrow.svg";
import x_stop from "@material-symbols/svg-400/outlined/stop.svg";
import x_skip_next from "@material-symbols/svg-400/outlined/skip_next.svg";
import x_skip_previous from "@material-symbols/svg-400/outlined/skip_previous.svg";
import x_fast_forward from "@material-symbols/svg-400/outlined/fast_forward.svg";
import x_fast_rewind from "@material-symbols/svg-400/outlined/fast_rewind.svg";
import x_volume_up from "@material-symbols/svg-400/outlined/volume_up.svg";
import x_volume_off from "@material-symbols/svg-400/outlined/volume_off.svg";
import x_mic from "@material-symbols/svg-400/outlined/mic.svg";
import x_trending_up from "@material-symbols/svg-400/outlined/trending_up.svg";
import x_trending_down from "@material-symbols/svg-400/outlined/trending_down.svg";
import x_arrow_upward from "@material-symbols/svg-400/outlined/arrow_upward.svg";
import x_arrow_downward from "@material-symbols/svg-400/outlined/arrow_downward.svg";
import x_directions_run from "@material-symbols/svg-400/outlined/directions_run.svg";
import x_directions_walk from "@material-symbols/svg-400/outlined/directions_walk.svg";
import x_directions_car from "@material-symbols/svg-400/outlined/directions_car.svg";
import x_priority_high from "@material-symbols/svg-400/outlined/priority_high.svg";
import x_schedule from "@material-symbols/svg-400/outlined/schedule.svg";
import x_today from "@material-symbols/svg-400/outlined/today.svg";
import x_alarm from "@material-symbols/svg-400/outlined/alarm.svg";
import x_timer from "@material-symbols/svg-400/outlined/timer.svg";
import x_bolt from "@material-symbols/svg-400/outlined/bolt.svg";
import x_local_shipping from "@material-symbols/svg-400/outlined/local_shipping.svg";
import x_inventory_2 from "@material-symbols/svg-400/outlined/inventory_2.svg";
import x_local_cafe from "@material-symbols/svg-400/outlined/local_cafe.svg";
import x_restaurant from "@material-symbols/svg-400/outlined/restaurant.svg";
import x_thumb_up from "@material-symbols/svg-400/outlined/thumb_up.svg";
import x_thumb_down from "@material-symbols/svg-400/outlined/thumb_down.svg";
import x_chat from "@material-symbols/svg-400/outlined/chat.svg";
import x_cloud from "@material-symbols/svg-400/outlined/cloud.svg";
import x_sunny from "@material-symbols/svg-400/outlined/sunny.svg";
import x_water_drop from "@material-symbols/svg-400/outlined/water_drop.svg";
import x_thermostat from "@material-symbols/svg-400/outlined/thermostat.svg";
import x_fitness_center from "@material-symbols/svg-400/outlined/fitness_center.svg";
import x_shopping_bag from "@material-symbols/svg-400/outlined/shopping_bag.svg";
import x_credit_card from "@material-symbols/svg-400/outlined/credit_card.svg";
import x_account_balance from "@material-symbols/svg-400/outlined/account_balance.svg";
import x_receipt from "@material-symbols/svg-400/outlined/receipt.svg";
import x_language from "@material-symbols/svg-400/outlined/language.svg";
import x_link from "@material-symbols/svg-400/outlined/link.svg";
import x_open_in_new from "@material-symbols/svg-400/outlined/open_in_new.svg";
import x_chevron_right from "@material-symbols/svg-400/outlined/chevron_right.svg";
import x_chevron_left from "@material-symbols/svg-400/outlined/chevron_left.svg";
import x_check_circle from "@material-symbols/svg-400/outlined/check_circle.svg";
import x_cancel from "@material-symbols/svg-400/outlined/cancel.svg";
import x_pending from "@material-symbols/svg-400/outlined/pending.svg";
import x_local_fire_department from "@material-symbols/svg-400/outlined/local_fire_department.svg";
import x_group from "@material-symbols/svg-400/outlined/group.svg";
import x_map from "@material-symbols/svg-400/outlined/map.svg";

/** The standard catalog's icon names (Icon.name's enum) → SVG markup. */
export const icons: Record<string, string> = {
  accountCircle: i_accountCircle,
  add: i_add,
  arrowBack: i_arrowBack,
  arrowForward: i_arrowForward,
  attachFile: i_attachFile,
  calendarToday: i_calendarToday,
  call: i_call,
  camera: i_camera,
  check: i_check,
  close: i_close,
  delete: i_delete,
  download: i_download,
  edit: i_edit,
  event: i_event,
  error: i_error,
  favorite: i_favorite,
  favoriteOff: i_favoriteOff,
  folder: i_folder,
  help: i_help,
  home: i_home,
  info: i_info,
  locationOn: i_locationOn,
  lock: i_lock,
  lockOpen: i_lockOpen,
  mail: i_mail,
  menu: i_menu,
  moreVert: i_moreVert,
  moreHoriz: i_moreHoriz,
  notificationsOff: i_notificationsOff,
  notifications: i_notifications,
  payment: i_payment,
  person: i_person,
  phone: i_phone,
  photo: i_photo,
  print: i_print,
  refresh: i_refresh,
  search: i_search,
  send: i_send,
  settings: i_settings,
  share: i_share,
  shoppingCart: i_shoppingCart,
  star: i_star,
  starHalf: i_starHalf,
  starOff: i_starOff,
  upload: i_upload,
  visibility: i_visibility,
  visibilityOff: i_visibilityOff,
  warning: i_warning,
};

/** More Material Symbols by their snake_case name → SVG markup. */
const more: Record<string, string> = {
  pause: x_pause,
  play_arrow: x_play_arrow,
  stop: x_stop,
  skip_next: x_skip_next,
  skip_previous: x_skip_previous,
  fast_forward: x_fast_forward,
  fast_rewind: x_fast_rewind,
  volume_up: x_volume_up,
  volume_off: x_volume_off,
  mic: x_mic,
  trending_up: x_trending_up,
  trending_down: x_trending_down,
  arrow_upward: x_arrow_upward,
  arrow_downward: x_arrow_downward,
  directions_run: x_directions_run,
  directions_walk: x_directions_walk,
  directions_car: x_directions_car,
  priority_high: x_priority_high,
  schedule: x_schedule,
  today: x_today,
  alarm: x_alarm,
  timer: x_timer,
  bolt: x_bolt,
  local_shipping: x_local_shipping,
  inventory_2: x_inventory_2,
  local_cafe: x_local_cafe,
  restaurant: x_restaurant,
  thumb_up: x_thumb_up,
  thumb_down: x_thumb_down,
  chat: x_chat,
  cloud: x_cloud,
  sunny: x_sunny,
  water_drop: x_water_drop,
  thermostat: x_thermostat,
  fitness_center: x_fitness_center,
  shopping_bag: x_shopping_bag,
  credit_card: x_credit_card,
  account_balance: x_account_balance,
  receipt: x_receipt,
  language: x_language,
  link: x_link,
  open_in_new: x_open_in_new,
  chevron_right: x_chevron_right,
  chevron_left: x_chevron_left,
  check_circle: x_check_circle,
  cancel: x_cancel,
  pending: x_pending,
  local_fire_department: x_local_fire_department,
  group: x_group,
  map: x_map,
};

/** The SVG of icon name (a catalog name, or a Material Symbol in camelCase or snake_case), or "". */
export function iconSVG(name: string): string {
  if (Object.hasOwn(icons, name)) return icons[name];
  const snake = name.replace(/([A-Z])/g, "_$1").toLowerCase();
  return Object.hasOwn(more, snake) ? more[snake] : "";
}
